//go:build unix

package pgtest

import "syscall"

// runAs is the user the server runs as; nil means this process's.
type runAs struct{ cred *syscall.Credential }

func asUser(uid, gid int) runAs {
	return runAs{&syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
}

func (u runAs) attr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Credential: u.cred} }

func (u runAs) postmasterAttr() *syscall.SysProcAttr {
	a := u.attr()
	a.Setpgid = true
	setDeathSignal(a)
	return a
}

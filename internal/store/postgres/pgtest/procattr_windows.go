//go:build windows

package pgtest

import "syscall"

// runAs: Windows never runs the tests as root, so there is no one to switch to.
type runAs struct{}

func asUser(uid, gid int) runAs { return runAs{} }

func (runAs) attr() *syscall.SysProcAttr { return nil }

func (runAs) postmasterAttr() *syscall.SysProcAttr { return nil }

package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/parley-dev/parley/internal/client"
	"github.com/parley-dev/parley/internal/door"
)

// Letters a Claude Code session's turns carried, as its transcript records
// them: a letter that started a turn is a user message from a peer
// ("type":"user", origin kind "peer"); one that reached a busy session
// between tool calls is a queued command from a peer ("type":"attachment",
// attachment type "queued_command"). A letter the session holds, or only
// queued (queue-operation), or names in a notice of its own (system lines:
// "Held peer message … preview"), was not carried: those lines do not
// count. Nor does a tool's output that quotes a letter.

// maxTranscriptRead bounds what one hook reads of a transcript: a hook that
// meets a transcript for the first time reads its end.
const maxTranscriptRead = 1 << 20

// transcriptLetters returns the ids of the letters that the transcript's
// lines after offset record as carried by a turn, and the offset of the end
// of its last complete line.
func transcriptLetters(path string, offset int64) (ids []string, end int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, offset, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, offset, err
	}
	size := fi.Size()
	if offset > size || offset < 0 {
		offset = 0 // a new or rewritten transcript
	}
	if size-offset > maxTranscriptRead {
		offset = size - maxTranscriptRead // the end is what a hook of this turn needs
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, offset, err
	}
	r := bufio.NewReaderSize(io.LimitReader(f, size-offset), 64<<10)
	end = offset
	first := offset > 0 && size-offset == maxTranscriptRead
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			break // EOF, or a line still being written: the next hook reads it
		}
		end += int64(len(line))
		if first {
			first = false // cut in the middle: not a line
			continue
		}
		if id := carriedLetter(line); id != "" {
			ids = append(ids, id)
		}
	}
	return ids, end, nil
}

// carriedLetter is the id of the letter that a transcript line records as
// carried by a turn, or "".
func carriedLetter(line []byte) string {
	if !bytes.Contains(line, []byte(door.LetterMarker)) {
		return ""
	}
	var l struct {
		Type    string `json:"type"`
		Message struct {
			Content json.RawMessage `json:"content"`
		} `json:"message"`
		Origin     struct{ Kind string } `json:"origin"`
		Attachment struct {
			Type   string                `json:"type"`
			Prompt string                `json:"prompt"`
			Origin struct{ Kind string } `json:"origin"`
		} `json:"attachment"`
	}
	if json.Unmarshal(line, &l) != nil {
		return ""
	}
	switch {
	case l.Type == "user" && l.Origin.Kind == "peer":
		var text string
		if json.Unmarshal(l.Message.Content, &text) != nil {
			var blocks []struct{ Type, Text string }
			if json.Unmarshal(l.Message.Content, &blocks) != nil {
				return ""
			}
			for _, b := range blocks {
				if b.Type == "text" {
					text += b.Text
				}
			}
		}
		return door.LetterID(text)
	case l.Type == "attachment" && l.Attachment.Type == "queued_command" && l.Attachment.Origin.Kind == "peer":
		return door.LetterID(l.Attachment.Prompt)
	}
	return ""
}

// reportCarried reports seen the letters the session's transcript recorded
// since the hook last looked, and keeps where it got to in st. It is best
// effort: the letter stays handed, or turns unconfirmed, without it.
func reportCarried(ctx context.Context, g *globals, c *client.Client, st *hookState, transcript string) {
	if transcript == "" {
		return
	}
	from := int64(0)
	if st.Transcript == transcript {
		from = st.Offset
	} else if fi, err := os.Stat(transcript); err == nil && fi.Size() > maxTranscriptRead {
		from = fi.Size() - maxTranscriptRead
	}
	ids, end, err := transcriptLetters(transcript, from)
	if err != nil {
		if !os.IsNotExist(err) {
			fmt.Fprintf(g.stderr, "parley hook: read the transcript: %v\n", err)
		}
		return
	}
	st.Transcript, st.Offset = transcript, end
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		if _, err := c.Seen(ctx, id); err != nil && !strings.Contains(err.Error(), "not a letter id") {
			fmt.Fprintf(g.stderr, "parley hook: report the letter seen: %v\n", err)
		}
	}
}

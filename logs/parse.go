package logs

import (
	"bytes"
	"errors"
	"fmt"
	"time"
)

// record is one parsed CRI log line. As in the kubelet's parseCRILog, the
// content of an F record keeps the line's '\n' (when it has one) and the
// content of a P record does not.
type record struct {
	ts      time.Time
	stream  int // streamOut or streamErr
	partial bool
	content []byte
}

const (
	streamOut = 0
	streamErr = 1
)

var streamNames = [2]string{Stdout, Stderr}

// parseRecord parses a CRI log line the way the kubelet's parseCRILog does.
func parseRecord(line []byte) (record, error) {
	var rec record
	i := bytes.IndexByte(line, ' ')
	if i < 0 {
		return rec, errors.New("timestamp is not found")
	}
	ts, err := time.Parse(time.RFC3339Nano, string(line[:i]))
	if err != nil {
		return rec, fmt.Errorf("unexpected timestamp format %q: %w", time.RFC3339Nano, err)
	}
	rec.ts = ts

	line = line[i+1:]
	i = bytes.IndexByte(line, ' ')
	if i < 0 {
		return rec, errors.New("stream type is not found")
	}
	switch string(line[:i]) {
	case Stdout:
		rec.stream = streamOut
	case Stderr:
		rec.stream = streamErr
	default:
		return rec, fmt.Errorf("unexpected stream type %q", line[:i])
	}

	line = line[i+1:]
	i = bytes.IndexByte(line, ' ')
	if i < 0 {
		return rec, errors.New("log tag is not found")
	}
	// Tags are ':'-separated for forward compatibility; only the first one means anything today.
	tag := line[:i]
	if j := bytes.IndexByte(tag, ':'); j >= 0 {
		tag = tag[:j]
	}
	rec.partial = len(tag) == 1 && tag[0] == 'P'
	if rec.partial && line[len(line)-1] == '\n' {
		line = line[:len(line)-1]
	}
	rec.content = line[i+1:]
	return rec, nil
}

// ParseLine parses one CRI log line, with or without its trailing newline.
// content is the logged bytes without the record's newline; partial is true
// for a P record (a piece of a longer line, or output that ended without a
// newline). content aliases line.
func ParseLine(line []byte) (ts time.Time, stream string, partial bool, content []byte, err error) {
	rec, err := parseRecord(line)
	if err != nil {
		return time.Time{}, "", false, nil, fmt.Errorf("parsing CRI log line: %w", err)
	}
	content = rec.content
	if n := len(content); !rec.partial && n > 0 && content[n-1] == '\n' {
		content = content[:n-1]
	}
	return rec.ts, streamNames[rec.stream], rec.partial, content, nil
}

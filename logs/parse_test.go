package logs

import (
	"testing"
	"time"
)

func TestParseLine(t *testing.T) {
	ts := time.Date(2016, 10, 6, 0, 17, 9, 669794202, time.UTC)
	for _, tc := range []struct {
		name    string
		line    string
		ts      time.Time
		stream  string
		partial bool
		content string
		wantErr bool
	}{
		{name: "full line", line: "2016-10-06T00:17:09.669794202Z stdout F log content 1\n", ts: ts, stream: Stdout, content: "log content 1"},
		{name: "partial line", line: "2016-10-06T00:17:09.669794202Z stderr P log content 2\n", ts: ts, stream: Stderr, partial: true, content: "log content 2"},
		{name: "without newline", line: "2016-10-06T00:17:09.669794202Z stdout F x", ts: ts, stream: Stdout, content: "x"},
		{name: "empty content", line: "2016-10-06T00:17:09.669794202Z stdout F \n", ts: ts, stream: Stdout, content: ""},
		{name: "empty partial content", line: "2016-10-06T00:17:09.669794202Z stdout P \n", ts: ts, stream: Stdout, partial: true, content: ""},
		{name: "content keeps spaces", line: "2016-10-06T00:17:09.669794202Z stdout F  a  b \n", ts: ts, stream: Stdout, content: " a  b "},
		{name: "binary content", line: "2016-10-06T00:17:09.669794202Z stdout F \x00\xff\r\n", ts: ts, stream: Stdout, content: "\x00\xff\r"},
		{name: "extra tags", line: "2016-10-06T00:17:09.669794202Z stdout P:x:y z\n", ts: ts, stream: Stdout, partial: true, content: "z"},
		{name: "unknown tag is full", line: "2016-10-06T00:17:09.669794202Z stdout Q z\n", ts: ts, stream: Stdout, content: "z"},
		{name: "time zone offset", line: "2016-10-06T02:17:09.669794202+02:00 stdout F z\n", ts: ts, stream: Stdout, content: "z"},
		{name: "short fraction", line: "2016-10-06T00:17:09Z stdout F z\n", ts: time.Date(2016, 10, 6, 0, 17, 9, 0, time.UTC), stream: Stdout, content: "z"},
		{name: "empty line", line: "", wantErr: true},
		{name: "no spaces", line: "garbage\n", wantErr: true},
		{name: "bad timestamp", line: "2016-10-06 stdout F x\n", wantErr: true},
		{name: "unknown stream", line: "2016-10-06T00:17:09.669794202Z stdin F x\n", wantErr: true},
		{name: "no stream", line: "2016-10-06T00:17:09.669794202Z stdout\n", wantErr: true},
		{name: "no tag", line: "2016-10-06T00:17:09.669794202Z stdout F\n", wantErr: true},
		{name: "docker json is not CRI", line: `{"log":"x\n","stream":"stdout","time":"2016-10-20T18:39:20.57606443Z"}` + "\n", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts, stream, partial, content, err := ParseLine([]byte(tc.line))
			if tc.wantErr {
				if err == nil {
					t.Fatalf("ParseLine(%q) succeeded", tc.line)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseLine(%q): %v", tc.line, err)
			}
			if !ts.Equal(tc.ts) || stream != tc.stream || partial != tc.partial || string(content) != tc.content {
				t.Errorf("ParseLine(%q) = %v %q %v %q, want %v %q %v %q",
					tc.line, ts, stream, partial, content, tc.ts, tc.stream, tc.partial, tc.content)
			}
		})
	}
}

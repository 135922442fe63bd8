package rafthttp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

func TestCodecRoundTrip(t *testing.T) {
	msgs := []*raftpb.Message{
		heartbeat(1, 2, 3),
		msgApp(1, 2, 7, bytes.Repeat([]byte("k"), 100_000)),
		{}, // an empty message is a zero-length frame
		msgSnap(1, 2, 9),
	}
	var buf []byte
	for _, m := range msgs {
		var err error
		if buf, err = appendFrame(buf, m); err != nil {
			t.Fatal(err)
		}
	}
	dec := newDecoder(bytes.NewReader(buf))
	for i, want := range msgs {
		got, err := dec.decode()
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if !proto.Equal(got, want) {
			t.Errorf("message %d: got %v, want %v", i, got, want)
		}
	}
	if _, err := dec.decode(); err != io.EOF {
		t.Errorf("after the last frame: %v, want io.EOF", err)
	}
}

func TestCodecRejectsBrokenStreams(t *testing.T) {
	frame, err := appendFrame(nil, heartbeat(1, 2, 3))
	if err != nil {
		t.Fatal(err)
	}
	huge := binary.BigEndian.AppendUint64(nil, frameLimit+1)
	garbage := append(binary.BigEndian.AppendUint64(nil, 3), 0xff, 0xff, 0xff)

	tests := []struct {
		name    string
		stream  []byte
		wantErr error  // matched with errors.Is, if set
		wantMsg string // matched against the error text, if set
	}{
		{name: "cut inside the length", stream: frame[:3], wantErr: io.ErrUnexpectedEOF},
		{name: "cut inside the message", stream: frame[:len(frame)-1], wantErr: io.ErrUnexpectedEOF},
		{name: "length over the limit", stream: huge, wantMsg: "exceeds the limit"},
		{name: "not a message", stream: garbage, wantMsg: "unmarshal raft message"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newDecoder(bytes.NewReader(tt.stream)).decode()
			if err == nil {
				t.Fatal("decoded a broken stream")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("error %v, want %v", err, tt.wantErr)
			}
			if tt.wantMsg != "" && !bytes.Contains([]byte(err.Error()), []byte(tt.wantMsg)) {
				t.Errorf("error %q lacks %q", err, tt.wantMsg)
			}
		})
	}
}

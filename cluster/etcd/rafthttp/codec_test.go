package rafthttp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
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

// FuzzDecode feeds arbitrary bytes to the peer stream decoder, as a peer
// (or anything that reaches the peer port) may send them. The decoder must
// return an error or a message, never panic or allocate past frameLimit;
// every message it returns must encode to a frame that decodes to the same
// message, and the frames read must account for the bytes consumed.
func FuzzDecode(f *testing.F) {
	var stream []byte
	for _, m := range []*raftpb.Message{heartbeat(1, 2, 3), msgApp(1, 2, 7, []byte("entry")), {}, msgSnap(1, 2, 9)} {
		frame, err := appendFrame(nil, m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(frame)
		f.Add(frame[:len(frame)-1])
		stream = append(stream, frame...)
	}
	f.Add(stream)
	f.Add(binary.BigEndian.AppendUint64(nil, frameLimit+1))
	f.Add(binary.BigEndian.AppendUint64(nil, 1<<63))
	f.Add(append(binary.BigEndian.AppendUint64(nil, 3), 0xff, 0xff, 0xff))
	f.Add(append(binary.BigEndian.AppendUint64(nil, 2), 0x08, 0x80)) // a varint cut short
	f.Add([]byte{})

	f.Fuzz(func(t *testing.T, in []byte) {
		dec := newDecoder(bytes.NewReader(in))
		consumed := 0
		for i := 0; ; i++ {
			m, err := dec.decode()
			if err != nil {
				if err == io.EOF && consumed != len(in) {
					t.Fatalf("clean EOF after %d of %d bytes", consumed, len(in))
				}
				return
			}
			if i > len(in) {
				t.Fatalf("decoded %d messages from %d bytes", i, len(in))
			}
			frame, err := appendFrame(nil, m)
			if err != nil {
				t.Fatalf("message %d decoded but does not encode: %v", i, err)
			}
			again, err := newDecoder(bytes.NewReader(frame)).decode()
			if err != nil {
				t.Fatalf("message %d re-encoded does not decode: %v", i, err)
			}
			if !proto.Equal(m, again) {
				t.Fatalf("message %d: %v re-decoded as %v", i, m, again)
			}
			consumed += frameHeaderSize + int(binary.BigEndian.Uint64(in[consumed:]))
		}
	})
}

// TestCodecDeclaredLengthAllocatesNothing: a frame header that declares a
// frame just under the limit, with nothing after it, fails without the
// decoder allocating the declared size (found by FuzzDecode, whose worker
// died allocating 510 MiB per input).
func TestCodecDeclaredLengthAllocatesNothing(t *testing.T) {
	stream := binary.BigEndian.AppendUint64(nil, frameLimit-1)
	stream = append(stream, 1, 2, 3)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := newDecoder(bytes.NewReader(stream)).decode()
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("error %v, want %v", err, io.ErrUnexpectedEOF)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
		t.Errorf("decoding a 3-byte frame that claims %d bytes allocated %d bytes", frameLimit-1, got)
	}
}

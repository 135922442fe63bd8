package rafthttp

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"slices"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// frameLimit bounds the size of one decoded message, as etcd's
// readBytesLimit does, so that a corrupt length prefix cannot make the
// receiver allocate without end.
const frameLimit = 512 * 1024 * 1024

// readChunk is how much of a frame the decoder reads (and allocates room
// for) at a time.
const readChunk = 1 << 20

// frameHeaderSize is the size of the big-endian length prefix of a frame,
// the same framing as etcd's messageEncoder.
const frameHeaderSize = 8

// appendFrame appends m to buf as one frame: its marshalled size as a
// big-endian uint64, then the marshalled bytes.
func appendFrame(buf []byte, m *raftpb.Message) ([]byte, error) {
	start := len(buf)
	buf = append(buf, make([]byte, frameHeaderSize)...)
	buf, err := proto.MarshalOptions{}.MarshalAppend(buf, m)
	if err != nil {
		return buf[:start], fmt.Errorf("marshal raft message %s to %x: %w", m.GetType(), m.GetTo(), err)
	}
	binary.BigEndian.PutUint64(buf[start:], uint64(len(buf)-start-frameHeaderSize))
	return buf, nil
}

// decoder reads frames from a stream. Its buffer is reused between
// messages: proto.Unmarshal copies bytes fields, so nothing aliases it.
type decoder struct {
	r   *bufio.Reader
	buf []byte
}

func newDecoder(r io.Reader) *decoder {
	return &decoder{r: bufio.NewReaderSize(r, 64*1024)}
}

// decode reads the next message. It returns io.EOF only at a clean frame
// boundary; a stream cut inside a frame is io.ErrUnexpectedEOF.
func (d *decoder) decode() (*raftpb.Message, error) {
	var hdr [frameHeaderSize]byte
	if _, err := io.ReadFull(d.r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint64(hdr[:])
	if n > frameLimit {
		return nil, fmt.Errorf("raft message of %d bytes exceeds the limit of %d bytes", n, frameLimit)
	}
	// The buffer grows with the bytes that arrive, not with the length the
	// sender declared: eight bytes claiming a 500 MiB frame must not make
	// the member allocate 500 MiB (the fuzzer's worker died of it). Growth
	// by slices.Grow keeps the copying amortised for a real large MsgApp.
	buf := d.buf[:0]
	for uint64(len(buf)) < n {
		chunk := int(min(n-uint64(len(buf)), readChunk))
		buf = slices.Grow(buf, chunk)
		got, err := io.ReadFull(d.r, buf[len(buf):len(buf)+chunk])
		buf = buf[:len(buf)+got]
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	d.buf = buf
	m := &raftpb.Message{}
	if err := proto.Unmarshal(d.buf, m); err != nil {
		return nil, fmt.Errorf("unmarshal raft message: %w", err)
	}
	// Do not keep a huge buffer alive for the life of the stream because of
	// one large MsgApp.
	if cap(d.buf) > 4*1024*1024 {
		d.buf = nil
	}
	return m, nil
}

// rest returns what follows the frames read so far, buffered bytes
// included: the snapshot payload after a MsgSnap frame.
func (d *decoder) rest() io.Reader { return d.r }

package rafthttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// rejectedError is a peer's refusal of our request (412 or 410): retrying
// soon will not help, and the cause must be logged where a human sees it.
type rejectedError struct {
	status int
	body   string
}

func (e *rejectedError) Error() string {
	return fmt.Sprintf("rejected by peer (%d %s): %s", e.status, http.StatusText(e.status), e.body)
}

// Unwrap lets callers test for ErrMemberRemoved and ErrClusterIDMismatch.
func (e *rejectedError) Unwrap() error {
	switch {
	case e.status == http.StatusGone:
		return ErrMemberRemoved
	case strings.HasPrefix(e.body, ErrClusterIDMismatch.Error()):
		return ErrClusterIDMismatch
	}
	return nil
}

// responseError turns a non-success response into an error, reading a
// bounded part of its body for the message.
func responseError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	body := strings.TrimSpace(string(b))
	switch resp.StatusCode {
	case http.StatusPreconditionFailed, http.StatusGone:
		return &rejectedError{status: resp.StatusCode, body: body}
	}
	return fmt.Errorf("unexpected http status %s: %s", resp.Status, body)
}

// stream is one outgoing POST /raft/stream: its body is the write end of a
// pipe that the HTTP client copies onto the connection chunk by chunk.
type stream struct {
	url    string
	pw     *io.PipeWriter
	cancel context.CancelFunc
	// accepted is closed when the peer answers 200: it reads our frames.
	accepted chan struct{}
	// done is closed when the request is over; err then says why.
	done chan struct{}
	err  error
}

// dial starts the request in its own goroutine and returns at once.
func (p *peer) dial(url string) *stream {
	ctx, cancel := context.WithCancel(p.ctx)
	pr, pw := io.Pipe()
	s := &stream{url: url, pw: pw, cancel: cancel, accepted: make(chan struct{}), done: make(chan struct{})}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+StreamPath, pr)
	if err != nil {
		s.err = fmt.Errorf("make stream request to %s: %w", url, err)
		close(s.done)
		return s
	}
	p.t.setHeaders(req.Header, p.id)
	req.Header.Set("Content-Type", "application/octet-stream")
	go func() {
		defer close(s.done)
		s.err = s.roundTrip(p.t.client, req)
		// Fail any write in progress or to come.
		pr.CloseWithError(s.err)
	}()
	return s
}

func (s *stream) roundTrip(client *http.Client, req *http.Request) error {
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("dial stream: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return responseError(resp)
	}
	close(s.accepted)
	// The peer never writes to the response; it ends when the peer closes
	// the stream (it stops, restarts, or replaces it).
	_, err = io.Copy(io.Discard, resp.Body)
	if err == nil {
		err = io.EOF
	}
	return fmt.Errorf("stream to %s closed: %w", s.url, err)
}

// close ends the request and waits for its goroutine.
func (s *stream) close() {
	s.cancel()
	s.pw.CloseWithError(errors.New("stream closed"))
	<-s.done
}

package lb

import (
	"io"
	"net"
)

// proxy copies bytes between client and server until both directions are
// done. When one side finishes sending (EOF) the other side's write half
// is closed, so a client that half-closes still gets the rest of the
// answer; when either direction fails, both connections are closed so the
// other direction ends too.
func proxy(client, server net.Conn) {
	errc := make(chan error, 2)
	go func() { errc <- copyHalf(server, client) }()
	go func() { errc <- copyHalf(client, server) }()
	if err := <-errc; err != nil {
		client.Close()
		server.Close()
	}
	<-errc
	client.Close()
	server.Close()
}

// copyHalf copies src to dst and, on EOF from src, passes the half-close
// on to dst.
func copyHalf(dst, src net.Conn) error {
	if _, err := io.Copy(dst, src); err != nil {
		return err
	}
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return dst.Close()
}

package app

import (
	"fmt"
	"html"
	"net/http"
	"strconv"
)

// standInPort is where the web servers klab stands in for listen, as the
// real images do.
const standInPort = 80

// writeWelcome answers GET / as a freshly installed web server does, with
// a page of klab's own words that says it is klab's stand-in, so that
// nobody mistakes it for the real server.
func writeWelcome(w http.ResponseWriter, r *http.Request, image string) {
	name := html.EscapeString(image)
	page := fmt.Sprintf(`<!DOCTYPE html>
<html>
<head>
<title>Welcome to %[1]s (klab stand-in)</title>
</head>
<body>
<h1>Welcome to %[1]s!</h1>
<p>If you can read this page, the web server answers: your pod runs and
the request reached it.</p>
<p>This is klab's stand-in for the %[1]s image. The node could not pull the
real image (it is offline, or klab runs without Docker), so klab serves
this page on port %[2]d in its place. The pod's events say why.</p>
</body>
</html>
`, name, standInPort)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(page)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write([]byte(page))
	}
}

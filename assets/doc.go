// Package assets holds what is shipped inside the klab binary besides code:
// the message catalogues (i18n). The lessons carry their own content
// (lessons/content), and the Docker images are built from the binary itself.
package assets

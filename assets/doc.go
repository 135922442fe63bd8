// Package assets holds what is shipped inside the klab binary: the message
// catalogues (i18n), and later sample manifests and the node image's files.
package assets

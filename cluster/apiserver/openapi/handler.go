package openapi

import (
	"bytes"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	openapiv2 "github.com/google/gnostic-models/openapiv2"
	openapiv3 "github.com/google/gnostic-models/openapiv3"
	"github.com/munnerz/goautoneg"
	"google.golang.org/protobuf/proto"
)

// Paths served, as kube-apiserver serves them.
const (
	pathV2 = "/openapi/v2"
	pathV3 = "/openapi/v3"
)

// Media types of the documents. client-go asks for /openapi/v2 only as
// protobuf (discovery's OpenAPISchema) and for /openapi/v3 documents as
// JSON. Both spellings of the protobuf type are accepted, as upstream; the
// one with "@" is what client-go sends.
const (
	contentJSON       = "application/json"
	protoV2Deprecated = "com.github.proto-openapi.spec.v2@v1.0+protobuf"
	protoV2           = "com.github.proto-openapi.spec.v2.v1.0+protobuf"
	protoV3Deprecated = "com.github.proto-openapi.spec.v3@v1.0+protobuf"
	protoV3           = "com.github.proto-openapi.spec.v3.v1.0+protobuf"
)

// openAPIV3Discovery is the index client-go's openapi.Client decodes from
// /openapi/v3, the shape of kube-openapi's handler3.OpenAPIV3Discovery.
type openAPIV3Discovery struct {
	Paths map[string]openAPIV3DiscoveryGroupVersion `json:"paths"`
}

type openAPIV3DiscoveryGroupVersion struct {
	ServerRelativeURL string `json:"serverRelativeURL"`
}

// servedDocument is one document, encoded on first request. Encoding is
// most of the cost of the documents (about 70 ms for the v3 documents of 20
// resources, against 25 ms to build them), and an API server that is
// never asked by kubectl should not pay it at start-up.
type servedDocument struct {
	toProto func([]byte) ([]byte, error)

	jsonOnce sync.Once
	source   func() (any, error) // dropped once encoded, to free the tree
	json     []byte
	hash     string
	jsonErr  error

	protoOnce sync.Once
	proto     []byte
	protoErr  error
}

func newServedDocument(source func() (any, error), toProto func([]byte) ([]byte, error)) *servedDocument {
	return &servedDocument{source: source, toProto: toProto}
}

func staticDocument(doc any) func() (any, error) {
	return func() (any, error) { return doc, nil }
}

func (d *servedDocument) encoded() ([]byte, string, error) {
	d.jsonOnce.Do(func() {
		doc, err := d.source()
		d.source = nil
		if err != nil {
			d.jsonErr = err
			return
		}
		d.json, d.jsonErr = json.Marshal(doc)
		d.hash = contentHash(d.json)
	})
	return d.json, d.hash, d.jsonErr
}

func (d *servedDocument) protobuf() ([]byte, error) {
	d.protoOnce.Do(func() {
		data, _, err := d.encoded()
		if err != nil {
			d.protoErr = err
			return
		}
		d.proto, d.protoErr = d.toProto(data)
	})
	return d.proto, d.protoErr
}

// contentHash is the ETag and the hash query parameter: SHA-512 in upper
// case hex, the form kube-apiserver uses.
func contentHash(data []byte) string {
	return fmt.Sprintf("%X", sha512.Sum512(data))
}

func v2ToProto(data []byte) ([]byte, error) {
	doc, err := openapiv2.ParseDocument(data)
	if err != nil {
		return nil, fmt.Errorf("convert openapi v2 to protobuf: %w", err)
	}
	return proto.Marshal(doc)
}

func v3ToProto(data []byte) ([]byte, error) {
	doc, err := openapiv3.ParseDocument(data)
	if err != nil {
		return nil, fmt.Errorf("convert openapi v3 to protobuf: %w", err)
	}
	return proto.Marshal(doc)
}

// handler serves the documents. The built documents are fixed by
// NewHandler; only their encodings are filled in, once, by requests.
type handler struct {
	v2       *servedDocument
	v3       map[string]*servedDocument // by gvPath
	index    *servedDocument
	modified time.Time
}

// NewHandler builds all documents once and returns a handler for /openapi/v2, /openapi/v3 and /openapi/v3/<group path>.
func NewHandler(resources []Resource) (http.Handler, error) {
	docs, err := buildDocuments(resources)
	if err != nil {
		return nil, err
	}
	h := &handler{
		v2:       newServedDocument(staticDocument(docs.v2), v2ToProto),
		v3:       map[string]*servedDocument{},
		modified: time.Now(),
	}
	for key, doc := range docs.v3 {
		h.v3[key] = newServedDocument(staticDocument(doc), v3ToProto)
	}
	// The index carries the hash of every document, so encoding it encodes
	// them all.
	h.index = newServedDocument(func() (any, error) {
		index := openAPIV3Discovery{Paths: map[string]openAPIV3DiscoveryGroupVersion{}}
		for key, doc := range h.v3 {
			_, hash, err := doc.encoded()
			if err != nil {
				return nil, fmt.Errorf("encode openapi v3 for %s: %w", key, err)
			}
			index.Paths[key] = openAPIV3DiscoveryGroupVersion{ServerRelativeURL: serverRelativeURL(key, hash)}
		}
		return index, nil
	}, nil)
	return h, nil
}

// serverRelativeURL is where the index points for one group-version:
// /openapi/v3/apis/apps/v1?hash=<HASH>.
func serverRelativeURL(key, hash string) string {
	u := url.URL{Path: pathV3 + "/" + key, RawQuery: url.Values{"hash": {hash}}.Encode()}
	return u.String()
}

// ServeHTTP answers GET and HEAD for the OpenAPI paths.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	path := r.URL.Path
	switch {
	case path == pathV2:
		h.serve(w, r, h.v2, protoV2, protoV2Deprecated)
	case path == pathV3 || path == pathV3+"/":
		h.serve(w, r, h.index, "", "")
	case strings.HasPrefix(path, pathV3+"/"):
		key := strings.TrimPrefix(path, pathV3+"/")
		doc, ok := h.v3[key]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, current, err := doc.encoded()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if hash := r.URL.Query().Get("hash"); hash != "" {
			if hash != current {
				// A client holding an old index is sent to the current
				// document rather than served stale bytes under the old hash.
				http.Redirect(w, r, serverRelativeURL(key, current), http.StatusMovedPermanently)
				return
			}
			// The hash names this exact content, so it may be cached for
			// good; the next document will have another hash.
			w.Header().Set("Cache-Control", "public, immutable")
			w.Header().Set("Expires", time.Now().AddDate(1, 0, 0).UTC().Format(http.TimeFormat))
		}
		h.serve(w, r, doc, protoV3, protoV3Deprecated)
	default:
		http.NotFound(w, r)
	}
}

// serve answers with the JSON or protobuf form of doc, whichever the
// Accept header prefers. Empty protobuf subtypes mean JSON only.
func (h *handler) serve(w http.ResponseWriter, r *http.Request, doc *servedDocument, protoSubtype, protoDeprecated string) {
	w.Header().Add("Vary", "Accept")
	accept := r.Header.Get("Accept")
	if accept == "" {
		accept = "*/*"
	}
	for _, clause := range goautoneg.ParseAccept(accept) {
		if clause.Type != "application" && clause.Type != "*" {
			continue
		}
		switch {
		case clause.SubType == "json" || clause.SubType == "*":
			data, hash, err := doc.encoded()
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			h.write(w, r, contentJSON, hash, data)
			return
		case protoSubtype != "" && (clause.SubType == protoSubtype || clause.SubType == protoDeprecated):
			data, err := doc.protobuf()
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			_, hash, _ := doc.encoded()
			// Another representation needs another entity tag.
			h.write(w, r, "application/"+protoSubtype, hash+"-pb", data)
			return
		}
	}
	http.Error(w, "no acceptable representation of the OpenAPI document", http.StatusNotAcceptable)
}

// write sends data with its entity tag; http.ServeContent answers
// If-None-Match with 304 and handles HEAD.
func (h *handler) write(w http.ResponseWriter, r *http.Request, contentType, etag string, data []byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("ETag", strconv.Quote(etag))
	http.ServeContent(w, r, "", h.modified, bytes.NewReader(data))
}

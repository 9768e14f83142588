// Package api holds the OpenAPI document of the public API, embedded so
// that the binaries can serve the very file the tests check the router
// against (matchctl demo renders it at /docs).
package api

import _ "embed"

// OpenAPI is api/openapi.yaml as committed.
//
//go:embed openapi.yaml
var OpenAPI []byte

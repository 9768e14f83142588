// Package migrations embeds the SQL schema migrations applied by `matchctl migrate`.
package migrations

import "embed"

// FS holds the goose migration files (NNNNN_name.sql).
//
//go:embed *.sql
var FS embed.FS

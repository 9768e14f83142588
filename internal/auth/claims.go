// Package auth verifies and mints the service's JSON Web Tokens. It knows
// nothing about HTTP.
package auth

import (
	"slices"
	"strings"
	"time"
)

// ServiceScope lets a backend caller act for any student.
const ServiceScope = "matching:service"

// Claims are the verified facts of a token the service acts on.
type Claims struct {
	Subject   string
	Scopes    []string
	ExpiresAt time.Time
	// ServiceRefused reports that the token carried ServiceScope from a
	// client VerifierOptions.ServiceClients does not name: the scope is
	// not in Scopes, and the token acts for its own subject only.
	ServiceRefused bool
}

// IsService reports whether the token may act for any student.
func (c Claims) IsService() bool { return slices.Contains(c.Scopes, ServiceScope) }

// MayActFor reports whether the token may act on studentID.
func (c Claims) MayActFor(studentID string) bool {
	return c.IsService() || strings.EqualFold(c.Subject, studentID)
}

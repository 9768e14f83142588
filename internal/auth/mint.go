package auth

import (
	"errors"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// MintOptions describe a development token.
type MintOptions struct {
	Subject  string
	Service  bool // adds the matching:service scope
	TTL      time.Duration
	Issuer   string
	Audience string
	Now      time.Time
}

// MintHS256 signs a development token with the shared secret.
func MintHS256(secret []byte, o MintOptions) (string, error) {
	if len(secret) == 0 {
		return "", errors.New("no HS256 secret")
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	if o.TTL <= 0 {
		o.TTL = time.Hour
	}
	c := tokenClaims{RegisteredClaims: jwt.RegisteredClaims{
		Subject:   o.Subject,
		IssuedAt:  jwt.NewNumericDate(o.Now),
		ExpiresAt: jwt.NewNumericDate(o.Now.Add(o.TTL)),
		Issuer:    o.Issuer,
	}}
	if o.Audience != "" {
		c.Audience = jwt.ClaimStrings{o.Audience}
	}
	var scopes []string
	if o.Service {
		scopes = append(scopes, ServiceScope)
	}
	c.Scope = strings.Join(scopes, " ")
	return jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(secret)
}

package domain

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"strings"
)

// A sync cursor is a position in change_seq, bound to one student and
// signed: base64url(version | position (8 bytes, big endian) | tag), where
// tag is the first 16 bytes of HMAC-SHA256(key, label | student id (16
// bytes) | version | position). The key is a server secret kept in
// PostgreSQL (server_keys), shared by every API replica.
const (
	cursorVersion = 1
	cursorLabel   = "matching/sync-cursor\x00"
	cursorTagLen  = 16
	cursorLen     = 1 + 8 + cursorTagLen
)

// studentBytes is a canonical UUID's 16 bytes.
func studentBytes(id string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(id, "-", ""))
	if err != nil || len(b) != 16 {
		return []byte(id) // not a UUID: still binds the cursor to the string
	}
	return b
}

func cursorTag(key []byte, student string, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(cursorLabel))
	m.Write(studentBytes(student))
	m.Write(body)
	return m.Sum(nil)[:cursorTagLen]
}

// EncodeCursor makes the cursor of position pos for student (a canonical
// UUID).
func EncodeCursor(key []byte, student string, pos int64) string {
	b := make([]byte, 1+8, cursorLen)
	b[0] = cursorVersion
	binary.BigEndian.PutUint64(b[1:], uint64(pos))
	b = append(b, cursorTag(key, student, b)...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeCursor returns the position of a cursor issued for student; any
// other string (garbled, forged, another student's) is 400 INVALID_REQUEST
// naming the cursor field.
func DecodeCursor(key []byte, student, s string) (int64, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != cursorLen || b[0] != cursorVersion ||
		!hmac.Equal(b[1+8:], cursorTag(key, student, b[:1+8])) {
		return 0, badCursor()
	}
	pos := int64(binary.BigEndian.Uint64(b[1:9]))
	if pos < 0 {
		return 0, badCursor()
	}
	return pos, nil
}

func badCursor() error {
	return Invalid("cursor was not issued to this student by this service; pull without a cursor to start over",
		map[string]string{"cursor": "is not a cursor issued for this student"})
}

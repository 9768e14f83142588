// Package domain holds the service's entity and value types and its error
// type. It depends on the standard library only and does no I/O.
package domain

import (
	"context"
	"errors"
	"fmt"
)

// Kind classifies an error; the HTTP layer maps each kind to a status code.
type Kind uint8

const (
	KindInternal Kind = iota // zero value: anything unclassified is internal
	KindInvalid
	KindUnauthenticated
	KindForbidden
	KindNotFound
	KindConflict
	KindUnprocessable
	KindRateLimited
	KindUnavailable
	KindNotImplemented
)

// Error codes of the API's error body.
const (
	CodeInvalidRequest     = "INVALID_REQUEST"
	CodeUnauthorized       = "UNAUTHORIZED"
	CodeForbidden          = "FORBIDDEN"
	CodeNotFound           = "NOT_FOUND"
	CodeMethodNotAllowed   = "METHOD_NOT_ALLOWED"
	CodeInvalidStudentID   = "INVALID_STUDENT_ID"
	CodeInvalidSchoolID    = "INVALID_SCHOOL_ID"
	CodeMissingProfile     = "MISSING_PROFILE"
	CodeRateLimited        = "RATE_LIMITED"
	CodeServiceUnavailable = "SERVICE_UNAVAILABLE"
	CodeNotImplemented     = "NOT_IMPLEMENTED"
	CodeInternal           = "INTERNAL_ERROR"
)

// Error is the one error type that crosses package boundaries. Message and
// Details are safe to show to clients; Err is the cause, for logs only.
type Error struct {
	Kind    Kind
	Code    string
	Message string
	Details map[string]any
	Err     error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an Error of kind k with the code that kind has by default.
func Errorf(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Code: defaultCode(k), Message: fmt.Sprintf(format, args...)}
}

// Invalid reports a bad request; fields maps each offending field to what is wrong with it.
func Invalid(message string, fields map[string]string) *Error {
	e := &Error{Kind: KindInvalid, Code: CodeInvalidRequest, Message: message}
	if len(fields) > 0 {
		e.Details = map[string]any{"fields": fields}
	}
	return e
}

// StudentNotFound is INVALID_STUDENT_ID with the id in details.
func StudentNotFound(id string) *Error {
	return &Error{Kind: KindNotFound, Code: CodeInvalidStudentID, Message: "student not found",
		Details: map[string]any{"student_id": id}}
}

// SchoolNotFound is INVALID_SCHOOL_ID with the id in details.
func SchoolNotFound(id string) *Error {
	return &Error{Kind: KindNotFound, Code: CodeInvalidSchoolID, Message: "school not found",
		Details: map[string]any{"school_id": id}}
}

// ClientGone reports err as the end of a call whose caller went away: the
// caller's context (a request's, when its client closed the connection)
// was canceled, and the call ended because of it. No dependency is to
// blame: such an error is not counted or logged as Redis or PostgreSQL
// failing, takes no fallback, and starts no further work for the caller.
func ClientGone(ctx context.Context, err error) bool {
	return err != nil && errors.Is(err, context.Canceled) && errors.Is(ctx.Err(), context.Canceled)
}

// Unavailable wraps a failing dependency as a 503.
func Unavailable(what string, err error) *Error {
	return &Error{Kind: KindUnavailable, Code: CodeServiceUnavailable,
		Message: what + " is unavailable, try again shortly", Err: err}
}

func defaultCode(k Kind) string {
	switch k {
	case KindInvalid:
		return CodeInvalidRequest
	case KindUnauthenticated:
		return CodeUnauthorized
	case KindForbidden:
		return CodeForbidden
	case KindNotFound:
		return CodeNotFound
	case KindUnprocessable:
		return CodeMissingProfile
	case KindRateLimited:
		return CodeRateLimited
	case KindUnavailable:
		return CodeServiceUnavailable
	case KindNotImplemented:
		return CodeNotImplemented
	}
	return CodeInternal
}

// KindOf returns the kind of the first *Error in err's chain, or KindInternal.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindInternal
}

// CodeOf returns the code of a domain error, "" for any other error.
func CodeOf(err error) string {
	var de *Error
	if errors.As(err, &de) {
		return de.Code
	}
	return ""
}

package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/collegematch/matching/internal/domain"
)

// statusClientClosed marks requests the client abandoned.
const statusClientClosed = 499

// MaxBodyBytes caps every request body.
const MaxBodyBytes = 1 << 20

var statusByKind = map[domain.Kind]int{
	domain.KindInvalid:         http.StatusBadRequest,
	domain.KindUnauthenticated: http.StatusUnauthorized,
	domain.KindForbidden:       http.StatusForbidden,
	domain.KindNotFound:        http.StatusNotFound,
	domain.KindConflict:        http.StatusConflict,
	domain.KindUnprocessable:   http.StatusUnprocessableEntity,
	domain.KindRateLimited:     http.StatusTooManyRequests,
	domain.KindUnavailable:     http.StatusServiceUnavailable,
	domain.KindNotImplemented:  http.StatusNotImplemented,
}

type errorBody struct {
	Error errorObject `json:"error"`
}

type errorObject struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details"`
}

// respondErr is the one place an error becomes a response. Anything that is
// not a *domain.Error, or is KindInternal, is logged and rendered as a
// generic 500 that leaks nothing.
func respondErr(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		// The client went away; nobody reads this answer. 499 (the
		// convention of nginx) keeps it out of the server-error metrics.
		writeError(w, statusClientClosed, domain.CodeInternal, "request cancelled by the client", nil)
		return
	}
	var de *domain.Error
	if !errors.As(err, &de) && timedOut(err) {
		// A dependency did not answer before a deadline (the request's, a
		// call's): the client may try again.
		de = domain.Unavailable("a dependency", err)
	}
	if de == nil || de.Kind == domain.KindInternal {
		log.ErrorContext(r.Context(), "request failed", "method", methodLabel(r.Method), "path", clip(r.URL.Path, maxLoggedPath),
			"request_id", RequestIDFrom(r.Context()), "err", err)
		writeError(w, http.StatusInternalServerError, domain.CodeInternal,
			"internal error; quote request id "+RequestIDFrom(r.Context())+" when reporting it", nil)
		return
	}
	status := statusByKind[de.Kind]
	switch de.Kind {
	case domain.KindUnauthenticated:
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
	case domain.KindUnavailable:
		log.WarnContext(r.Context(), "dependency unavailable", "path", clip(r.URL.Path, maxLoggedPath),
			"request_id", RequestIDFrom(r.Context()), "err", err)
		if w.Header().Get("Retry-After") == "" {
			w.Header().Set("Retry-After", "1")
		}
	}
	code := de.Code
	if code == "" {
		code = domain.Errorf(de.Kind, "").Code
	}
	writeError(w, status, code, de.Message, de.Details)
}

// timedOut reports an error that ends in a deadline: a context's, or a
// network call's.
func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

func writeError(w http.ResponseWriter, status int, code, message string, details map[string]any) {
	if details == nil {
		details = map[string]any{}
	}
	encode(w, status, errorBody{Error: errorObject{Code: code, Message: message, Details: details}})
}

// encode writes v as JSON with the given status.
func encode(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Only a programming error (an unsupported type) gets here.
		status, b = http.StatusInternalServerError, []byte(`{"error":{"code":"INTERNAL_ERROR","message":"internal error","details":{}}}`)
	}
	writeJSON(w, status, append(b, '\n'))
}

// writeJSON writes pre-encoded JSON bytes.
func writeJSON(w http.ResponseWriter, status int, b []byte) {
	setHeaders(w.Header(), headerContentType, contentTypeJSON, headerContentLength, strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b) // the client is gone; nothing useful to do
}

// setHeaders sets each canonical name of pairs (name, value, name,
// value, ...) to its value, the values sharing one array, each capped so
// that adding to one cannot overwrite the next: one allocation where
// Header.Set makes one a header and canonicalizes its name.
func setHeaders(h http.Header, pairs ...string) {
	n := len(pairs) / 2
	values := make([]string, n)
	for i := range n {
		values[i] = pairs[2*i+1]
		h[pairs[2*i]] = values[i : i+1 : i+1]
	}
}

// validator is implemented by request types that check their own fields.
type validator interface {
	Valid() map[string]string
}

// decode reads the request's JSON body into T: the body is checked
// against its shape s first (checkShape: depth, array lengths, unknown and
// repeated fields), then decoded strictly: wrong types, trailing data,
// empty and oversize bodies are all 400 INVALID_REQUEST with the offending
// field named.
func decode[T any](r *http.Request, s *shape) (T, error) {
	var v T
	if err := decodeInto(r, s, &v); err != nil {
		return v, err
	}
	if vv, ok := any(v).(validator); ok {
		if problems := vv.Valid(); len(problems) > 0 {
			return v, domain.Invalid(summarize(problems), problems)
		}
	}
	return v, nil
}

func decodeInto(r *http.Request, s *shape, v any) error {
	b, err := readBody(r)
	if err != nil {
		return err
	}
	return decodeBytes(b, s, v)
}

// decodeBytes is decodeInto for a body already read. The shape has
// refused every name but the exact names of v's fields, so encoding/json
// (which matches names case-insensitively) sees no other.
func decodeBytes(b []byte, s *shape, v any) error {
	p := scanShape(b, s)
	if err := p.err(); err != nil {
		return err
	}
	if p.trailing {
		return errTrailingData
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return decodeError(io.EOF)
	}
	if md, ok := v.(memberDecoder); ok && json.Valid(b) && members(b, md.takeMember) {
		return nil
	}
	if err := json.Unmarshal(b, v); err != nil {
		return decodeError(err)
	}
	return nil
}

// memberDecoder is a request type that takes its fields from the body's
// members itself, without encoding/json's reflection: a hot path's body
// (POST /recommendations). It is used for a body that passed its shape
// (so every name is exactly one of its fields, each given once) and is
// valid JSON; what it takes is then what json.Unmarshal would set, and
// any other body takes the json.Unmarshal path, errors and all.
type memberDecoder interface {
	takeMember(key, value []byte) bool
}

var errTrailingData = domain.Invalid("request body must hold exactly one JSON object",
	map[string]string{"body": "unexpected data after the JSON object"})

// readBody returns the request's body (at most MaxBodyBytes) once its
// Content-Type is checked. A body actingStudent has read is not copied
// again.
func readBody(r *http.Request) ([]byte, error) {
	if err := checkContentType(r); err != nil {
		return nil, err
	}
	if lb, ok := r.Body.(*limitedBody); ok {
		return lb.b, nil
	}
	b, err := readLimited(nil, r)
	if err != nil {
		return nil, decodeError(err)
	}
	return b, nil
}

// readLimited reads r's body, failing with *http.MaxBytesError past
// MaxBodyBytes. The buffer is sized from Content-Length when the request
// gives one, so a large body is not copied over and over as it grows.
func readLimited(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	var buf bytes.Buffer
	if n := r.ContentLength; n > 0 && n <= MaxBodyBytes {
		buf.Grow(int(n) + bytes.MinRead) // room for the read that finds the end
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	return buf.Bytes(), err
}

func decodeError(err error) error {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
		mbe *http.MaxBytesError
	)
	switch {
	case errors.As(err, &mbe):
		return domain.Invalid("request body is larger than 1 MiB", map[string]string{"body": "larger than 1 MiB"})
	case errors.Is(err, io.EOF):
		return domain.Invalid("request body is empty; a JSON object is required", map[string]string{"body": "is empty"})
	case errors.Is(err, io.ErrUnexpectedEOF):
		return domain.Invalid("request body is not valid JSON: it ends too early", map[string]string{"body": "truncated JSON"})
	case errors.As(err, &syn):
		return domain.Invalid(fmt.Sprintf("request body is not valid JSON (at byte %d)", syn.Offset),
			map[string]string{"body": "malformed JSON at byte " + strconv.FormatInt(syn.Offset, 10)})
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return domain.Invalid("request body must be a JSON object", map[string]string{"body": "must be a JSON object"})
		}
		return domain.Invalid("field "+field+" has the wrong type", map[string]string{field: "must be " + jsonType(typ.Type.String())})
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return domain.Invalid("unknown field "+field, map[string]string{field: "is not a known field"})
	}
	var de *domain.Error
	if errors.As(err, &de) { // from a custom UnmarshalJSON
		return de
	}
	return domain.Invalid("request body is not valid JSON", map[string]string{"body": err.Error()})
}

func jsonType(goType string) string {
	switch {
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "uint"):
		return "an integer"
	case strings.HasPrefix(goType, "float"):
		return "a number"
	case goType == "string":
		return "a string"
	case goType == "bool":
		return "true or false"
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	case strings.HasPrefix(goType, "map"), strings.Contains(goType, "struct"):
		return "an object"
	}
	if i := strings.LastIndex(goType, "."); i >= 0 {
		goType = goType[i+1:]
	}
	return "of type " + goType
}

// summarize makes the error message for a set of field problems.
func summarize(problems map[string]string) string {
	if len(problems) == 1 {
		for f, p := range problems {
			return f + " " + p
		}
	}
	return strconv.Itoa(len(problems)) + " fields are invalid; see details.fields"
}

// checkContentType accepts JSON bodies, and bodies sent without a
// Content-Type (many mobile HTTP stacks omit it).
func checkContentType(r *http.Request) error {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(strings.ToLower(ct), "application/json") {
		return domain.Invalid("Content-Type must be application/json", map[string]string{"body": "must be JSON"})
	}
	return nil
}

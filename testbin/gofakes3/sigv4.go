// AWS Signature Version 4 (header form) in front of gofakes3, which checks no credentials: every
// request must be signed with the one key pair the server was started with. The payload hash is
// taken as the client states it (x-amz-content-sha256): the signature proves the key, and gofakes3
// itself bounds the clock skew of x-amz-date. Query-string (presigned) requests are refused.
package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

const algorithm = "AWS4-HMAC-SHA256"

type credentials struct {
	accessKeyID     string
	secretAccessKey string
}

// authorization is the parsed Authorization header.
type authorization struct {
	accessKeyID   string
	scope         string // date/region/service/aws4_request
	date          string
	region        string
	service       string
	signedHeaders []string
	signature     string
}

func parseAuthorization(header string) (authorization, error) {
	var a authorization
	rest, ok := strings.CutPrefix(header, algorithm+" ")
	if !ok {
		return a, fmt.Errorf("not %s", algorithm)
	}
	for _, part := range strings.Split(rest, ",") {
		key, value, found := strings.Cut(strings.TrimSpace(part), "=")
		if !found {
			return a, fmt.Errorf("malformed %q", part)
		}
		switch key {
		case "Credential":
			fields := strings.Split(value, "/")
			if len(fields) != 5 || fields[4] != "aws4_request" {
				return a, fmt.Errorf("malformed Credential")
			}
			a.accessKeyID, a.date, a.region, a.service = fields[0], fields[1], fields[2], fields[3]
			a.scope = strings.Join(fields[1:], "/")
		case "SignedHeaders":
			a.signedHeaders = strings.Split(value, ";")
		case "Signature":
			a.signature = value
		}
	}
	if a.accessKeyID == "" || len(a.signedHeaders) == 0 || a.signature == "" {
		return a, fmt.Errorf("Credential, SignedHeaders and Signature are required")
	}
	return a, nil
}

// uriEncode is SigV4's encoding: everything but the unreserved characters, upper-case hex.
func uriEncode(text string) string {
	var b strings.Builder
	for i := 0; i < len(text); i++ {
		c := text[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

func canonicalQuery(raw string) (string, error) {
	values, err := url.ParseQuery(raw)
	if err != nil {
		return "", err
	}
	var pairs []string
	for key, list := range values {
		for _, value := range list {
			pairs = append(pairs, uriEncode(key)+"="+uriEncode(value))
		}
	}
	sort.Strings(pairs)
	return strings.Join(pairs, "&"), nil
}

// headerValue is a signed header's value as the client saw it (net/http moves some out of Header).
func headerValue(r *http.Request, name string) string {
	var values []string
	switch name {
	case "host":
		values = []string{r.Host}
	case "content-length":
		values = r.Header.Values("Content-Length")
		if len(values) == 0 && r.ContentLength >= 0 {
			values = []string{strconv.FormatInt(r.ContentLength, 10)}
		}
	case "transfer-encoding":
		values = r.TransferEncoding
	default:
		values = r.Header.Values(name)
	}
	trimmed := make([]string, len(values))
	for i, value := range values {
		trimmed[i] = strings.Join(strings.Fields(value), " ")
	}
	return strings.Join(trimmed, ",")
}

func hmacSHA256(key []byte, data string) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(data))
	return mac.Sum(nil)
}

// verify checks r's signature against creds; the error says what is wrong, never the expected value.
func verify(r *http.Request, creds credentials) (code string, err error) {
	if r.URL.Query().Has("X-Amz-Signature") {
		return "AccessDenied", fmt.Errorf("presigned requests are not accepted")
	}
	header := r.Header.Get("Authorization")
	if header == "" {
		return "AccessDenied", fmt.Errorf("the request is not signed (AWS Signature Version 4 required)")
	}
	auth, err := parseAuthorization(header)
	if err != nil {
		return "AuthorizationHeaderMalformed", err
	}
	if subtle.ConstantTimeCompare([]byte(auth.accessKeyID), []byte(creds.accessKeyID)) != 1 {
		return "InvalidAccessKeyId", fmt.Errorf("the access key ID is not this store's")
	}
	amzDate := r.Header.Get("X-Amz-Date")
	if !strings.HasPrefix(amzDate, auth.date) {
		return "AuthorizationHeaderMalformed", fmt.Errorf("x-amz-date matching the credential's date is required")
	}
	payloadHash := r.Header.Get("X-Amz-Content-Sha256")
	if payloadHash == "" {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return "IncompleteBody", err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		sum := sha256.Sum256(body)
		payloadHash = hex.EncodeToString(sum[:])
	}
	signsHost := false
	var headers strings.Builder
	for _, name := range auth.signedHeaders {
		signsHost = signsHost || name == "host"
		headers.WriteString(name + ":" + headerValue(r, name) + "\n")
	}
	if !signsHost {
		return "AuthorizationHeaderMalformed", fmt.Errorf("the host header must be signed")
	}
	// The path as sent: the client signed its own encoding of it.
	path, rawQuery, _ := strings.Cut(r.RequestURI, "?")
	query, err := canonicalQuery(rawQuery)
	if err != nil {
		return "AuthorizationHeaderMalformed", err
	}
	canonical := strings.Join([]string{
		r.Method, path, query, headers.String(), strings.Join(auth.signedHeaders, ";"), payloadHash,
	}, "\n")
	digest := sha256.Sum256([]byte(canonical))
	toSign := strings.Join([]string{algorithm, amzDate, auth.scope, hex.EncodeToString(digest[:])}, "\n")
	key := hmacSHA256([]byte("AWS4"+creds.secretAccessKey), auth.date)
	for _, part := range []string{auth.region, auth.service, "aws4_request"} {
		key = hmacSHA256(key, part)
	}
	expected := hex.EncodeToString(hmacSHA256(key, toSign))
	if subtle.ConstantTimeCompare([]byte(auth.signature), []byte(expected)) != 1 {
		return "SignatureDoesNotMatch", fmt.Errorf("the signature does not match this store's secret key")
	}
	return "", nil
}

// requireSignature answers 403 with an S3 error to any request not signed with creds.
func requireSignature(creds credentials, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if code, err := verify(r, creds); err != nil {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code><Message>%s</Message></Error>\n", code, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

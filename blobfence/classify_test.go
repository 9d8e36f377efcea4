package blobfence

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// responseError builds the error the SDK returns for an HTTP reply.
func responseError(status int, code string) error {
	resp := &smithyhttp.Response{Response: &http.Response{StatusCode: status, Header: http.Header{}}}
	var inner error = errors.New("no API error")
	if code != "" {
		inner = &smithy.GenericAPIError{Code: code, Message: code}
	}
	return &smithy.OperationError{ServiceID: "S3", OperationName: "PutObject",
		Err: &smithyhttp.ResponseError{Response: resp, Err: inner}}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want outcome
	}{
		{"success", nil, outcomeOK},
		{"412 PreconditionFailed", responseError(412, "PreconditionFailed"), outcomeRace},
		{"409 ConditionalRequestConflict", responseError(409, "ConditionalRequestConflict"), outcomeRace},
		{"404 NoSuchKey on If-Match", responseError(404, "NoSuchKey"), outcomeRace},
		{"404 NoSuchBucket", responseError(404, "NoSuchBucket"), outcomeFailed},
		{"400 InvalidRequest", responseError(400, "InvalidRequest"), outcomeFailed},
		{"403 AccessDenied", responseError(403, "AccessDenied"), outcomeFailed},
		{"501 NotImplemented", responseError(501, "NotImplemented"), outcomeFailed},
		{"500 InternalError", responseError(500, "InternalError"), outcomeUnknown},
		{"503 SlowDown", responseError(503, "SlowDown"), outcomeUnknown},
		{"transport error", &smithy.OperationError{Err: &smithyhttp.RequestSendError{Err: errors.New("reset")}}, outcomeUnknown},
		{"context cancelled", &smithy.OperationError{Err: context.Canceled}, outcomeUnknown},
	} {
		if got := classify(tc.err); got != tc.want {
			t.Errorf("classify(%s) = %d, want %d", tc.name, got, tc.want)
		}
	}
	if !isNotFound(responseError(404, "NotFound")) || isNotFound(responseError(404, "NoSuchBucket")) || isNotFound(responseError(403, "")) {
		t.Error("isNotFound: a missing key is not found, a missing bucket or a 403 is not")
	}
}

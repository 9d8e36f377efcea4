package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// Credentials of the versitygw servers the harness starts.
const (
	versitygwAccess = "fencekit"
	versitygwSecret = "fencekit-secret"
)

// S3Env is one test's bucket on the S3-compatible server.
type S3Env struct {
	Endpoint  string
	AccessKey string
	SecretKey string
	// Client is a path-style client of Endpoint.
	Client *s3.Client
	// Bucket is fresh for this test, emptied and deleted at cleanup.
	Bucket string
}

// S3Server is an S3-compatible server the harness started: versitygw (posix
// backend) or SeaweedFS. Its data directory survives [Server.Restart].
type S3Server struct {
	*Server
	Endpoint  string
	AccessKey string
	SecretKey string
}

var s3Server resolved

type s3Creds struct{ access, secret string }

// S3 returns a fresh bucket on the S3 server: FENCEKIT_S3_ENDPOINT (with
// FENCEKIT_S3_ACCESS_KEY and FENCEKIT_S3_SECRET_KEY) when set; otherwise the
// server [S3ServerKind] names, which the harness starts once for the test
// binary's lifetime (stopped by [Main], or killed when the binary exits).
func S3(tb testing.TB) *S3Env {
	tb.Helper()
	s3Server.once.Do(resolveS3)
	if s3Server.err != nil {
		unavailable(tb, "S3 server", s3Server.where, EnvS3Endpoint, s3Server.err)
	}
	creds := s3Server.extra.(s3Creds)
	env := &S3Env{Endpoint: s3Server.where, AccessKey: creds.access, SecretKey: creds.secret}
	env.Client = NewS3Client(env.Endpoint, env.AccessKey, env.SecretKey)
	env.Bucket = newBucket(tb, env.Client)
	return env
}

// StartS3Server starts a private server of [S3ServerKind] for fault tests (a
// test may stop and restart it); it is killed at cleanup. posixFlags name a
// versitygw mode (such as --data-integrity-etag or --sidecar DIR): with
// them the server is always a versitygw whose posix backend gets them.
func StartS3Server(tb testing.TB, posixFlags ...string) *S3Server {
	tb.Helper()
	srv, err := launchKind(tb.TempDir(), posixFlags...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { srv.Kill() })
	return srv
}

// Client returns a client of the server.
func (s *S3Server) Client() *s3.Client { return NewS3Client(s.Endpoint, s.AccessKey, s.SecretKey) }

// sharedS3 is the server that S3 started, stopped by Main.
var sharedS3 *S3Server

// launchKind starts the server [S3ServerKind] names (versitygw when
// posixFlags are given).
func launchKind(dir string, posixFlags ...string) (*S3Server, error) {
	switch kind := S3ServerKind(); {
	case len(posixFlags) > 0 || kind == ServerVersitygw:
		return launchS3Server(context.Background(), dir, posixFlags...)
	case kind == ServerSeaweedFS:
		return launchSeaweedFS(dir)
	default:
		return nil, fmt.Errorf("testenv: %s=%q: want %s or %s", EnvS3Server, kind, ServerVersitygw, ServerSeaweedFS)
	}
}

// LaunchVersitygw starts a versitygw with its data in dir, for a caller
// that outlives a test (a benchmark binary keeps one for all its
// benchmarks): the caller kills it.
func LaunchVersitygw(ctx context.Context, dir string) (*S3Server, error) {
	return launchS3Server(ctx, dir)
}

func launchS3Server(ctx context.Context, dir string, posixFlags ...string) (*S3Server, error) {
	bin, err := toolPath("versitygw", EnvVersitygw)
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, fmt.Errorf("testenv: versitygw data dir: %w", err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	args := append([]string{"--port", addr, "--access", versitygwAccess, "--secret", versitygwSecret, "posix"}, posixFlags...)
	s := newServer("versitygw", bin, port, dir, append(args, data))
	endpoint := "http://" + addr
	s.ready = func(ctx context.Context) error { return ProbeHTTP(ctx, endpoint) }
	if err := s.Start(ctx); err != nil {
		return nil, err
	}
	return &S3Server{Server: s, Endpoint: endpoint, AccessKey: versitygwAccess, SecretKey: versitygwSecret}, nil
}

// toolPath finds the binary name: the path in envVar, PATH, then
// $GOPATH/bin (where `make tools` installs versitygw and etcd).
func toolPath(name, envVar string) (string, error) {
	if p := os.Getenv(envVar); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", envVar, p, err)
		}
		return p, nil
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		home, _ := os.UserHomeDir()
		gopath = filepath.Join(home, "go")
	}
	p := filepath.Join(filepath.SplitList(gopath)[0], "bin", name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s is not installed (not in PATH nor %s); run `make tools` or set %s", name, p, envVar)
	}
	return p, nil
}

// NewS3Client returns a path-style S3 client of endpoint with static
// credentials, in region us-east-1.
func NewS3Client(endpoint, access, secret string) *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(endpoint),
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider(access, secret, ""),
		UsePathStyle: true,
	})
}

func newBucket(tb testing.TB, c *s3.Client) string {
	tb.Helper()
	bucket := uniqueID(tb)
	if len(bucket) > 63 {
		bucket = bucket[len(bucket)-63:]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		tb.Fatalf("testenv: create bucket %s: %v", bucket, err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := EmptyBucket(ctx, c, bucket); err != nil {
			tb.Errorf("testenv: empty bucket %s: %v", bucket, err)
			return
		}
		if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)}); err != nil {
			tb.Errorf("testenv: delete bucket %s: %v", bucket, err)
		}
	})
	return bucket
}

// EmptyBucket deletes every object in bucket.
func EmptyBucket(ctx context.Context, c *s3.Client, bucket string) error {
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			var nsb *types.NoSuchBucket
			if errors.As(err, &nsb) {
				return nil
			}
			return err
		}
		for _, obj := range page.Contents {
			if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: obj.Key}); err != nil {
				return err
			}
		}
	}
	return nil
}

func probeHTTP(endpoint string) error {
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	defer cancel()
	return ProbeHTTP(ctx, endpoint)
}

// ProbeHTTP returns nil when any HTTP reply comes back from endpoint.
func ProbeHTTP(ctx context.Context, endpoint string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// resolveS3 finds the S3 server S3 uses, starting one of [S3ServerKind] when
// FENCEKIT_S3_ENDPOINT is unset; run once, through s3Server.once.
func resolveS3() {
	if ep, set := getenv(EnvS3Endpoint, ""); set {
		s3Server.where = ep
		s3Server.extra = s3Creds{os.Getenv(EnvS3AccessKey), os.Getenv(EnvS3SecretKey)}
		s3Server.err = probeHTTP(ep)
		return
	}
	srv, err := launchKind(filepath.Join(os.TempDir(), "fencekit-s3-"+strconv.Itoa(os.Getpid())))
	if err == nil {
		sharedS3 = srv
		s3Server.where, s3Server.extra = srv.Endpoint, s3Creds{srv.AccessKey, srv.SecretKey}
		return
	}
	s3Server.where, s3Server.err = "a "+S3ServerKind()+" started by the harness", err
}

package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// S3 servers the harness can start, chosen by FENCEKIT_S3_SERVER.
const (
	ServerVersitygw = "versitygw"
	ServerSeaweedFS = "seaweedfs"
)

// S3ServerKind is the S3 server the harness starts for [S3] and
// [StartS3Server]: FENCEKIT_S3_SERVER, versitygw when unset.
func S3ServerKind() string {
	if v := os.Getenv(EnvS3Server); v != "" {
		return v
	}
	return ServerVersitygw
}

// seaweedfsConfig gives the gateway one identity, the harness's
// credentials, with every permission.
const seaweedfsConfig = `{"identities":[{"name":"fencekit","credentials":[{"accessKey":%q,"secretKey":%q}],"actions":["Admin","Read","Write","List","Tagging"]}]}`

// seaweedfsMasterTOML makes each bucket (a collection) grow one volume at a
// time instead of seven, so that a test run's hundreds of buckets fit.
const seaweedfsMasterTOML = "[master.volume_growth]\ncopy_1 = 1\n"

// launchSeaweedFS starts `weed server` with its master, volume server,
// filer and S3 gateway, every listener on a free loopback port, its log on
// stderr (the server's log file), and the Iceberg and Lance catalogs and
// telemetry off. Its gRPC sockets are always /tmp/seaweedfs-*-grpc-PORT.sock.
func launchSeaweedFS(dir string) (*S3Server, error) {
	bin, err := toolPath("weed", EnvWeed)
	if err != nil {
		return nil, err
	}
	ports := make([]int, 8)
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, fmt.Errorf("testenv: seaweedfs data dir: %w", err)
	}
	cfg := filepath.Join(dir, "s3.json")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, seaweedfsConfig, versitygwAccess, versitygwSecret), 0o600); err != nil {
		return nil, fmt.Errorf("testenv: seaweedfs config: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "master.toml"), []byte(seaweedfsMasterTOML), 0o644); err != nil {
		return nil, fmt.Errorf("testenv: seaweedfs master.toml: %w", err)
	}
	p := func(i int) string { return strconv.Itoa(ports[i]) }
	args := []string{"-logtostderr", "server",
		"-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-dir=" + data,
		"-master.port=" + p(0), "-master.port.grpc=" + p(1), "-master.telemetry=false", "-master.resumeState=false",
		"-master.volumeSizeLimitMB=64", "-volume.max=0", "-volume.preStopSeconds=0",
		"-volume.port=" + p(2), "-volume.port.grpc=" + p(3),
		"-filer", "-filer.port=" + p(4), "-filer.port.grpc=" + p(5), "-filer.localSocket=" + filepath.Join(dir, "filer.sock"),
		"-s3", "-s3.port=" + p(6), "-s3.port.grpc=" + p(7), "-s3.config=" + cfg, "-s3.localSocket=" + filepath.Join(dir, "s3.sock"),
		"-s3.port.iceberg=0", "-s3.port.lance=0", "-s3.autoCreateBucket=false",
	}
	s := newServer(ServerSeaweedFS, bin, ports[6], dir, args)
	endpoint := "http://" + s.Addr
	client := NewS3Client(endpoint, versitygwAccess, versitygwSecret)
	s.ready = func(ctx context.Context) error { return seaweedfsWrites(ctx, client) }
	s.timeout = 90 * time.Second
	if err := s.Start(context.Background()); err != nil {
		return nil, err
	}
	return &S3Server{Server: s, Endpoint: endpoint, AccessKey: versitygwAccess, SecretKey: versitygwSecret}, nil
}

// seaweedfsWrites succeeds once the gateway stores and deletes an object:
// its HTTP port answers before the master has a volume server to write to.
func seaweedfsWrites(ctx context.Context, c *s3.Client) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	bucket := aws.String("fencekit-ready")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: bucket}); err != nil &&
		!strings.Contains(err.Error(), "BucketAlreadyOwnedByYou") && !strings.Contains(err.Error(), "BucketAlreadyExists") {
		return err
	}
	key := aws.String("probe")
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: key, Body: strings.NewReader("ok")}); err != nil {
		return err
	}
	_, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: bucket, Key: key})
	return err
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/fencekit/fencekit/blobfence"
)

// s3Result is what s3-check found.
type s3Result struct {
	Endpoint string `json:"endpoint"` // "" for AWS's own
	Bucket   string `json:"bucket"`
	OK       bool   `json:"ok"`
	Error    string `json:"error,omitempty"`
}

func setupS3Check(fs *flag.FlagSet, o *output) func(context.Context, []string) error {
	endpoint := fs.String("s3-endpoint", os.Getenv(envS3Endpoint), "S3 endpoint URL; empty for AWS (env "+envS3Endpoint+")")
	access := fs.String("s3-access-key", envOr(envS3AccessKey, os.Getenv("AWS_ACCESS_KEY_ID")), "access key (env "+envS3AccessKey+", else AWS_ACCESS_KEY_ID)")
	secret := fs.String("s3-secret-key", envOr(envS3SecretKey, os.Getenv("AWS_SECRET_ACCESS_KEY")), "secret key (env "+envS3SecretKey+", else AWS_SECRET_ACCESS_KEY)")
	region := fs.String("region", envOr("AWS_REGION", "us-east-1"), "region (env AWS_REGION)")
	pathStyle := fs.Bool("path-style", true, "path-style requests (most S3-compatible servers); false for virtual-hosted AWS buckets")
	bucket := fs.String("bucket", "", "the bucket to probe (required); a scratch key "+blobfence.VerifyKeyPrefix+"... is written and deleted")
	timeout := fs.Duration("timeout", time.Minute, "bound of the whole check (about fifteen requests)")
	return func(ctx context.Context, args []string) error {
		if err := needArgs(args, 0, 0, ""); err != nil {
			return err
		}
		switch {
		case *bucket == "":
			return usagef("-bucket is required")
		case *access == "" || *secret == "":
			return usagef("no credentials: set %s and %s (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), or -s3-access-key and -s3-secret-key", envS3AccessKey, envS3SecretKey)
		case *timeout <= 0:
			return usagef("-timeout %v must be positive", *timeout)
		}
		opts := s3.Options{
			Region:       *region,
			Credentials:  credentials.NewStaticCredentialsProvider(*access, *secret, os.Getenv("AWS_SESSION_TOKEN")),
			UsePathStyle: *pathStyle,
		}
		if *endpoint != "" {
			opts.BaseEndpoint = aws.String(*endpoint)
		}
		store, err := blobfence.New(s3.New(opts), *bucket, nil)
		if err != nil {
			return usagef("%v", err)
		}
		ctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		err = store.Verify(ctx)
		r := s3Result{Endpoint: *endpoint, Bucket: *bucket, OK: err == nil}
		where := *bucket + " on " + *endpoint
		if *endpoint == "" {
			where = *bucket + " on AWS S3 (" + *region + ")"
		}
		if err != nil {
			r.Error = err.Error()
			if o.json {
				if perr := o.encode(r); perr != nil {
					return perr
				}
			}
			if errors.Is(err, blobfence.ErrUnsupported) {
				return fmt.Errorf("%s cannot fence writes: %w", where, err)
			}
			return fmt.Errorf("check of %s failed: %w", where, err)
		}
		return o.value(r, fmt.Sprintf("ok: %s honours If-None-Match and If-Match on PUT, If-Match on CompleteMultipartUpload and DELETE, and keeps user metadata\n", where))
	}
}

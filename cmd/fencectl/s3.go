package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
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
	endpoint := fs.String("s3-endpoint", "", "S3 endpoint URL; empty: the SDK's (AWS_ENDPOINT_URL_S3, the profile, else AWS)")
	access := fs.String("s3-access-key", "", "access key; empty: the SDK's default credential chain (AWS_ACCESS_KEY_ID, profiles, SSO, instance roles)")
	secret := fs.String("s3-secret-key", "", "secret key, with -s3-access-key")
	region := fs.String("region", "", "region; empty: the SDK's default (AWS_REGION, the profile), else us-east-1")
	pathStyle := fs.Bool("path-style", true, "path-style requests (most S3-compatible servers); false for virtual-hosted AWS buckets")
	bucket := fs.String("bucket", "", "the bucket to probe (required); a scratch key "+blobfence.VerifyKeyPrefix+"... is written and deleted")
	timeout := fs.Duration("timeout", time.Minute, "bound of the whole check (at most 429 requests)")
	return func(ctx context.Context, args []string) error {
		if err := needArgs(args, 0, 0, ""); err != nil {
			return err
		}
		switch {
		case *bucket == "":
			return usagef("-bucket is required")
		case (*access == "") != (*secret == ""):
			return usagef("-s3-access-key and -s3-secret-key go together")
		case *timeout <= 0:
			return usagef("-timeout %v must be positive", *timeout)
		}
		ctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		var load []func(*config.LoadOptions) error
		if *access != "" {
			load = append(load, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(*access, *secret, os.Getenv("AWS_SESSION_TOKEN"))))
		}
		if *region != "" {
			load = append(load, config.WithRegion(*region))
		}
		cfg, err := config.LoadDefaultConfig(ctx, load...)
		if err != nil {
			return usagef("AWS configuration: %v", err)
		}
		if cfg.Region == "" {
			cfg.Region = "us-east-1"
		}
		if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
			return usagef("no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or a profile), or -s3-access-key and -s3-secret-key: %v", err)
		}
		client := s3.NewFromConfig(cfg, func(so *s3.Options) {
			so.UsePathStyle = *pathStyle
			if *endpoint != "" {
				so.BaseEndpoint = aws.String(*endpoint)
			}
		})
		store, err := blobfence.New(client, *bucket, nil)
		if err != nil {
			return usagef("%v", err)
		}
		err = store.Verify(ctx)
		used := aws.ToString(client.Options().BaseEndpoint) // the flag, or the SDK's AWS_ENDPOINT_URL_S3
		r := s3Result{Endpoint: used, Bucket: *bucket, OK: err == nil}
		where := *bucket + " on " + used
		if used == "" {
			where = *bucket + " on AWS S3 (" + cfg.Region + ")"
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
		return o.value(r, fmt.Sprintf("ok: %s honours If-None-Match and If-Match on PUT, gives new bytes a new ETag, and keeps user metadata\n", where))
	}
}

// Package blobfence writes S3 objects fenced by tokens.
package blobfence

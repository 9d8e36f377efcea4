package testenv

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

// Images started when no server is configured and a Docker engine answers.
const (
	redisImage     = "redis:7"
	postgresImage  = "postgres:15"
	versitygwImage = "versity/versitygw:v1.8.0"
)

// containers holds what testcontainers started, terminated by Main.
var containers struct {
	sync.Mutex
	list []testcontainers.Container
}

var errNoDocker = errors.New("no Docker engine answers")

var dockerOK = sync.OnceValue(func() bool {
	p, err := testcontainers.NewDockerProvider()
	if err != nil {
		return false
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	defer cancel()
	return p.Health(ctx) == nil
})

// runContainer starts image, waits for port and returns its host:port.
func runContainer(image, port string, opts ...testcontainers.ContainerCustomizer) (string, error) {
	if !dockerOK() {
		return "", errNoDocker
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	opts = append(opts, testcontainers.WithExposedPorts(port), testcontainers.WithWaitStrategy(wait.ForListeningPort(port)))
	c, err := testcontainers.Run(ctx, image, opts...)
	if c != nil {
		containers.Lock()
		containers.list = append(containers.list, c)
		containers.Unlock()
	}
	if err != nil {
		return "", fmt.Errorf("testcontainers: start %s: %w", image, err)
	}
	return c.PortEndpoint(ctx, port, "")
}

func containerRedis() (string, error) { return runContainer(redisImage, "6379/tcp") }

func containerPostgres() (string, error) {
	addr, err := runContainer(postgresImage, "5432/tcp", testcontainers.WithEnv(map[string]string{
		"POSTGRES_HOST_AUTH_METHOD": "trust", "POSTGRES_DB": "test",
	}))
	if err != nil {
		return "", err
	}
	u := "postgres://postgres@" + addr + "/test"
	// The port listens before initdb's restart ends: wait for a real session.
	for range 100 {
		if err = pingPostgres(u); err == nil {
			return u, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return "", err
}

func containerS3() (endpoint, access, secret string, err error) {
	addr, err := runContainer(versitygwImage, "7070/tcp", testcontainers.WithCmd(
		"--port", ":7070", "--access", versitygwAccess, "--secret", versitygwSecret, "posix", "/tmp"))
	if err != nil {
		return "", "", "", err
	}
	return "http://" + addr, versitygwAccess, versitygwSecret, nil
}

func terminateContainers() {
	containers.Lock()
	defer containers.Unlock()
	for _, c := range containers.list {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		c.Terminate(ctx)
		cancel()
	}
	containers.list = nil
}

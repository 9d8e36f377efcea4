package sqlfence_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testenv"
	"github.com/fencekit/fencekit/internal/valid"
	"github.com/fencekit/fencekit/sqlfence"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func init() { testenv.RegisterChild("sqlfence-holder", holderChild) }

// holderChild is a lease holder in its own process: it claims resource "r"
// with HOLDER_TOKEN, writes one log row, prints "claimed", waits until the
// file HOLDER_GO exists, writes a second row and commits, then prints
// "result: <err>".
func holderChild() int {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tok, err := valid.ParseToken(os.Getenv("HOLDER_TOKEN"))
	if err != nil {
		fmt.Println("result:", err)
		return 1
	}
	conn, err := pgx.Connect(ctx, os.Getenv("HOLDER_URL"))
	if err != nil {
		fmt.Println("result:", err)
		return 1
	}
	defer conn.Close(context.Background())
	err = sqlfence.InTx(ctx, conn, "r", tok, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO log (tok, step) VALUES ($1, 'first')`, int64(tok)); err != nil {
			return err
		}
		fmt.Println("claimed", conn.PgConn().PID())
		for ctx.Err() == nil {
			if _, err := os.Stat(os.Getenv("HOLDER_GO")); err == nil {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		_, err := tx.Exec(ctx, `INSERT INTO log (tok, step) VALUES ($1, 'second')`, int64(tok))
		return err
	})
	fmt.Println("result:", err)
	return 0
}

func startChildHolder(t *testing.T, dbURL string, tok fence.Token) (*testenv.Child, string) {
	goFile := filepath.Join(t.TempDir(), "go")
	c := testenv.StartChild(t, "sqlfence-holder", "HOLDER_URL="+dbURL, "HOLDER_TOKEN="+tok.String(), "HOLDER_GO="+goFile)
	if _, err := c.Expect(testCtx(t), "claimed"); err != nil {
		t.Fatal(err)
	}
	return c, goFile
}

// A holder process killed with SIGKILL between claim and commit: the
// server rolls its transaction back when the connection drops, and the
// newer holder, which was waiting on the guard row's lock, proceeds.
func TestHolderProcessKilled(t *testing.T) {
	env := setup(t)
	exec(t, env.Pool, `CREATE TABLE log (id bigserial PRIMARY KEY, tok bigint, step text)`)
	child, _ := startChildHolder(t, env.URL, 10)
	b := startHolder(t, env.URL, "r", 11, false)
	waitForLockWait(t, env.Pool, b.conn.PgConn().PID())
	if err := child.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := <-b.done; err != nil {
		t.Fatalf("newer holder after the old process died: %v", err)
	}
	want := []string{"11:first", "11:second"}
	if got := logRows(t, env.Pool); !slices.Equal(got, want) {
		t.Fatalf("log = %v, want %v", got, want)
	}
}

// A holder process paused (SIGSTOP) inside its transaction would hold the
// guard row's lock, and block every newer holder, for as long as it is
// stopped. With idle_in_transaction_session_timeout on the holder's
// connection the server ends that session, rolls it back and lets the newer
// holder through; the resumed holder's next statement then fails.
func TestHolderProcessPausedIdleTimeout(t *testing.T) {
	env := setup(t)
	exec(t, env.Pool, `CREATE TABLE log (id bigserial PRIMARY KEY, tok bigint, step text)`)
	u, err := url.Parse(env.URL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("idle_in_transaction_session_timeout", "300") // ms
	u.RawQuery = q.Encode()
	child, goFile := startChildHolder(t, u.String(), 10)
	if err := child.Stop(); err != nil {
		t.Fatal(err)
	}
	b := startHolder(t, env.URL, "r", 11, false)
	if err := <-b.done; err != nil {
		t.Fatalf("newer holder while the old one is stopped: %v", err)
	}
	if err := os.WriteFile(goFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := child.Cont(); err != nil {
		t.Fatal(err)
	}
	line, err := child.Expect(testCtx(t), "result:")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(line) == "result: <nil>" {
		t.Fatal("paused holder committed after the server ended its session")
	}
	t.Logf("paused holder, resumed: %s", line)
	want := []string{"11:first", "11:second"}
	if got := logRows(t, env.Pool); !slices.Equal(got, want) {
		t.Fatalf("log = %v, want %v", got, want)
	}
	wantStale(t, sqlfence.Claim(testCtx(t), env.Pool, "r", 10), "r", 10, 11)
}

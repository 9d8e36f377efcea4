package fence

import "context"

type tokenKey struct{}

// WithToken returns a copy of ctx that carries tok, so that code deep in a
// call chain can attach the current lease's token to its writes without
// threading it through every signature. The adapters take the token as an
// explicit argument; use [TokenFrom] to fetch it at the call site.
func WithToken(ctx context.Context, tok Token) context.Context {
	return context.WithValue(ctx, tokenKey{}, tok)
}

// TokenFrom returns the token carried by ctx and whether there was one.
func TokenFrom(ctx context.Context) (Token, bool) {
	tok, ok := ctx.Value(tokenKey{}).(Token)
	return tok, ok
}

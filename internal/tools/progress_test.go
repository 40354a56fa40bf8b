package tools

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A call's progress only increases, as MCP asks, across its senders (staging's bytes, the same
// value again while a file copies, then a held connection's notice), between a real MCP server
// and client; a call without a progress token gets none.
func TestProgressOnlyIncreases(t *testing.T) {
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "v0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "steps"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, struct{}, error) {
		ctx = withProgress(ctx)
		for _, v := range []float64{5, 5, 3} {
			progressOf(ctx).send(ctx, req, v, 10, fmt.Sprintf("staging %v", v))
		}
		progressOf(withProgress(ctx)).send(ctx, req, 0, 0, "held") // the same call's sender
		return nil, struct{}{}, nil
	})
	var mu sync.Mutex
	var got []string
	client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, fmt.Sprintf("%v/%v %s", r.Params.Progress, r.Params.Total, r.Params.Message))
		},
	})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	params := &mcp.CallToolParams{Name: "steps", Arguments: map[string]any{}}
	params.SetProgressToken("p1")
	if _, err := cs.CallTool(ctx, params); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "steps", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	// The notifications precede the result on the wire; wait (bounded) for their handler anyway.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= 4 || time.Now().After(deadline) {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"5/10 staging 5", "6/10 staging 5", "7/10 staging 3", "8/0 held"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("progress notifications %q, want %q", got, want)
	}
}

package guest

import (
	"context"
	"net"
	"sync"
)

// serveEach hands every connection ln accepts to handle, each in a goroutine of its own, until
// the function it returns is called: that cancels handle's context, closes ln and waits for
// every handle to return. With limit > 0, at most limit are handled at once; a connection beyond
// them goes to full (nil: closed).
func serveEach(ln net.Listener, limit int, full func(net.Conn), handle func(context.Context, net.Conn)) func() {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var slots chan struct{}
	if limit > 0 {
		slots = make(chan struct{}, limit)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if slots != nil {
				select {
				case slots <- struct{}{}:
				default:
					if full == nil {
						c.Close()
					} else {
						go full(c)
					}
					continue
				}
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if slots != nil {
					defer func() { <-slots }()
				}
				handle(ctx, c)
			}()
		}
	}()
	return func() {
		cancel()
		ln.Close()
		wg.Wait()
	}
}

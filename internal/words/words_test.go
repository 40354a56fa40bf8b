package words

import (
	"testing"
	"time"
)

func TestWords(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{Count(0, "change"), "0 changes"},
		{Count(1, "change"), "1 change"},
		{Count(2, "directory", "directories"), "2 directories"},
		{Ago(0), "just now"},
		{Ago(-time.Second), "just now"},
		{Ago(20 * time.Second), "20 seconds ago"},
		{Ago(61 * time.Second), "1 minute ago"},
		{Ago(8*time.Minute + 59*time.Second), "8 minutes ago"},
		{Ago(3 * time.Hour), "3 hours ago"},
		{Ago(47 * time.Hour), "47 hours ago"},
		{Ago(72 * time.Hour), "3 days ago"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

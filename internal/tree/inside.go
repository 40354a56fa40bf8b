package tree

import "strings"

// Inside returns p relative to root ("." for root itself) when p is root or below it. Both
// are clean slash-separated paths of the same kind (absolute, or relative to one directory,
// where "." holds every path that does not climb out); nothing is resolved, so a caller that
// deals with links resolves them first. An empty root holds nothing. It is the one place that
// answers "is this path inside that one".
func Inside(root, p string) (rel string, ok bool) {
	switch {
	case root == "":
		return "", false
	case p == root:
		return ".", true
	case root == ".":
		if p == ".." || strings.HasPrefix(p, "../") || strings.HasPrefix(p, "/") {
			return "", false
		}
		return p, true
	}
	if rest, ok := strings.CutPrefix(p, strings.TrimSuffix(root, "/")+"/"); ok && rest != "" {
		return rest, true
	}
	return "", false
}

// Below says whether p is strictly below root.
func Below(root, p string) bool {
	rel, ok := Inside(root, p)
	return ok && rel != "."
}

// Within says whether p is root or below it.
func Within(root, p string) bool {
	_, ok := Inside(root, p)
	return ok
}

// WithinAny says whether p is one of roots or below one of them (an empty roots holds
// nothing): a review, or a listing, limited to some paths.
func WithinAny(roots []string, p string) bool {
	for _, r := range roots {
		if Within(r, p) {
			return true
		}
	}
	return false
}

package server

import (
	"net/http"
	"net/url"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/zizq/zizq/api"
)

// router matches paths segment by segment, preferring literal segments over
// parameters, and answers unknown paths (404) and wrong methods (405) with
// JSON bodies. net/http's mux cannot express /jobs/{id}/budgets beside
// /jobs/budgets/{key}, and its 404/405 bodies are plain text.
type router struct {
	routes []*route
	s      *Server
}

type route struct {
	segs    []string // literal, or "{name}"
	methods map[string]http.HandlerFunc
	early   bool // served while the server starts (start.go)
	raw     bool // negotiates its own format: Accept is not checked
}

func (rt *router) handle(method, pattern string, h http.HandlerFunc) {
	segs := strings.Split(strings.Trim(pattern, "/"), "/")
	for _, r := range rt.routes {
		if strings.Join(r.segs, "/") == strings.Join(segs, "/") {
			r.methods[method] = h
			return
		}
	}
	rt.routes = append(rt.routes, &route{segs: segs, methods: map[string]http.HandlerFunc{method: h}})
}

func (rt *router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer rt.s.recoverPanic(w, r)
	if headerBytes(r) > maxHeaderBytes {
		rt.s.writeError(w, r, http.StatusRequestHeaderFieldsTooLarge, "request header fields too large")
		return
	}
	raw := strings.Split(strings.Trim(r.URL.EscapedPath(), "/"), "/")
	segs := make([]string, len(raw))
	for i, s := range raw {
		u, err := pathUnescape(s)
		if err != nil {
			rt.s.writeError(w, r, http.StatusBadRequest, "invalid path: "+err.Error())
			return
		}
		segs[i] = u
	}
	best, params := rt.match(segs)
	if best == nil {
		rt.s.writeError(w, r, http.StatusNotFound, "not found")
		return
	}
	h := best.methods[r.Method]
	if h == nil && r.Method == http.MethodHead {
		h = best.methods[http.MethodGet]
	}
	if h == nil {
		allowed := make([]string, 0, len(best.methods))
		for m := range best.methods {
			allowed = append(allowed, m)
		}
		sort.Strings(allowed)
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		rt.s.writeError(w, r, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	// Accept is checked before anything else; the take stream negotiates
	// its own formats.
	if strings.Join(best.segs, "/") != "jobs/take" && !best.raw {
		if _, ok := api.ResponseFormat(r.Header.Get("Accept")); !ok {
			rt.s.respond(w, r, http.StatusNotAcceptable, api.Error{Error: "not acceptable", Supported: api.SupportedFormats})
			return
		}
	}
	if !best.early && !rt.s.isServing() {
		rt.s.notReady(w, r)
		return
	}
	// A budget key is looked up as sent and echoed back: one that is not
	// UTF-8 would come back as U+FFFD, another key than the one asked for.
	if key, ok := params["key"]; ok && !utf8.ValidString(key) {
		rt.s.writeError(w, r, http.StatusBadRequest, "invalid path: budget key must be valid UTF-8")
		return
	}
	for k, v := range params {
		r.SetPathValue(k, v)
	}
	h(w, r)
}

// match returns the route whose segments match, the one with the earliest
// literal segment winning where several do.
func (rt *router) match(segs []string) (*route, map[string]string) {
	var best *route
	var bestScore []bool
	for _, r := range rt.routes {
		if len(r.segs) != len(segs) {
			continue
		}
		score := make([]bool, len(segs))
		ok := true
		for i, p := range r.segs {
			if isParam(p) {
				continue
			}
			if p != segs[i] {
				ok = false
				break
			}
			score[i] = true
		}
		if ok && (best == nil || moreLiteral(score, bestScore)) {
			best, bestScore = r, score
		}
	}
	if best == nil {
		return nil, nil
	}
	params := map[string]string{}
	for i, p := range best.segs {
		if isParam(p) {
			params[p[1:len(p)-1]] = segs[i]
		}
	}
	return best, params
}

// headerBytes is the size of a request's header as net/http counts it
// against MaxHeaderBytes: the request line and every field line.
func headerBytes(r *http.Request) int {
	n := len(r.Method) + len(r.RequestURI) + len(r.Proto) + len(r.Host) + 4
	for k, vs := range r.Header {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	return n
}

func isParam(s string) bool { return strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") }

func moreLiteral(a, b []bool) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i]
		}
	}
	return false
}

func pathUnescape(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	return url.PathUnescape(s)
}

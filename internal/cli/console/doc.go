// Package console is the web console of a running mesh: a page served on the mesh's HTTP
// listener that shows the roster, the agents `cotal up` supervises, channels, a live feed,
// channel history, durable delivery, health and small plots, and lets the operator mint and revoke credentials and configure
// channels.
//
// It reads through the same client API as the CLI (ARCHITECTURE.md "Read"): per space one
// passive Endpoint with an admin credential the mesh mints in process (space.Mesh.Endpoint),
// so the feed shows every channel, DM and anycast (SPEC Appendix B). Every page, view, event
// stream and action is of one space, named in the query (?space=NAME; default the mesh's
// first), and the page header offers the others. Operator actions call
// space.Mesh methods, as internal/cli/admin does, with the CLI's validation and errors.
//
// The URL `cotal up` prints carries the console token once in the query; the console trades
// it for a session bound to the Host it was opened on, whose URLs (/s/ID/) carry one secret
// and an HttpOnly SameSite=Strict cookie the other, so the cookie a browser also sends to
// other ports of the machine opens nothing there. A state-changing request must be a POST
// with the session's Origin (see auth.go, session.go). The mesh's listener answers only a
// Host that names it (space/http.go). Long lists are shown a page at a time (pages.go), and
// every view stops with its request. Pages are rendered on the server from embedded
// templates; a little plain JavaScript refreshes them and follows the feed over server-sent
// events. Nothing is loaded from elsewhere.
//
// The supervised agents come through the Agents interface (ShowAgents), which `cotal up`
// fills with its supervisor, so the console imports no supervisor. What a runtime printed
// (its last output line) is shown as text: html/template escapes markup, and termsafe makes
// terminal controls and bidi overrides visible.
package console

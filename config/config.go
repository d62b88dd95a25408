package config

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/cotal-go/cotal/internal/suggest"
)

// Errors Load and Validate return.
var (
	// ErrInvalid is wrapped by every problem Validate reports.
	ErrInvalid = errors.New("invalid configuration")
	// ErrUnknownKey means the file or the flag overrides name a key Config does not have.
	ErrUnknownKey = errors.New("unknown configuration key")
	// ErrBadNumber means a count or a size in bytes is not a whole number ("1GB").
	ErrBadNumber = errors.New("not a whole number")
)

// Config is everything a cotal mesh runs from. The zero value is not useful; start from
// Default or Load.
type Config struct {
	// Dir is the data directory holding the key store, the JetStream store and cotal.yaml.
	// Default: DefaultDir(), the user's data directory + "/cotal".
	Dir string `koanf:"dir"`

	// Listen is the host:port of the NATS client listener; "" means no TCP listener
	// (in-process connections only). Default "127.0.0.1:4222", SPEC §10's default port.
	Listen string `koanf:"listen"`

	// HTTP is the host:port serving monitoring, health and metrics; "" (the default) is off.
	// It must be a loopback address (127.0.0.1, [::1], localhost) unless HTTPPublic is set:
	// nats-server's endpoints on it show connections and accounts.
	HTTP string `koanf:"http"`

	// HTTPPublic allows HTTP to bind beyond loopback, e.g. 0.0.0.0:8222 for a scraper on
	// another host. /healthz, /metrics and /varz are then readable by anyone who reaches it;
	// the endpoints that show identities still need the bearer token. Default false.
	HTTPPublic bool `koanf:"http_public"`

	// Spaces are the spaces the mesh hosts, one NATS account each (SPEC §1, §9). Each is a
	// token that SPEC §3 sanitization leaves unchanged: letters, digits, _ and -.
	// Default ["main"].
	Spaces []string `koanf:"spaces"`

	// TLS turns on TLS for the client listener (clients then join with cotals://, SPEC §10).
	// Both files or neither; default neither.
	TLS TLS `koanf:"tls"`

	// Sync is when JetStream flushes its store to disk: "always" (default) fsyncs every write
	// so an acknowledged publish survives power loss; "interval"
	// fsyncs every SyncInterval, faster but may lose the last interval on a crash.
	Sync string `koanf:"sync"`

	// SyncInterval is the fsync period used when Sync is "interval". Default 2m, at least 1s.
	SyncInterval time.Duration `koanf:"sync_interval"`

	// Open runs the mesh without authentication, for local development only: it is outside
	// every security claim of SPEC §9 (see also §2). Default false.
	Open bool `koanf:"open"`

	// OpenInsecureBind lets an open mesh listen on an interface other than loopback, where
	// anyone who reaches it reads and writes everything with no authentication and no TLS.
	// Without it Validate refuses open with such a listener; with it the mesh logs a warning
	// at start. Default false.
	OpenInsecureBind bool `koanf:"open_insecure_bind"`

	// Log selects the log format and level.
	Log Log `koanf:"log"`

	// Expiry is the default lifetime of a minted credential (SPEC §9 user JWTs). Default 24h,
	// at least 1s since JWT expiry has whole-second resolution.
	Expiry time.Duration `koanf:"expiry"`

	// Limits bound what one agent, and one space, may take from the mesh.
	Limits Limits `koanf:"limits"`

	// Cluster makes the mesh one node of a cluster of cotal nodes; off by default.
	Cluster Cluster `koanf:"cluster"`

	// Leaf makes the mesh a hub that leaf meshes connect to, or a leaf of one; off by default.
	Leaf Leaf `koanf:"leaf"`
}

// Limits bound the broker resources of each space and of each minted credential, so one
// hostile agent cannot exhaust the mesh for the others. The defaults are sized for a laptop
// mesh of hundreds of agents; byte values are plain integers.
type Limits struct {
	// Connections is the most client connections one space accepts, the mesh's own few
	// included; the next connection is refused. Default 1000, at least 10.
	Connections int `koanf:"connections"`
	// ConnectionsPerIdentity is the most connections one minted credential (one identity)
	// holds at once; the mesh closes the ones past it, newest first, just after they connect,
	// so one agent cannot take its space's connections from the others. The mesh's own
	// connections are not counted. Default 32, at least 1.
	ConnectionsPerIdentity int `koanf:"connections_per_identity"`
	// Subscriptions is the most subscriptions one connection of a minted credential holds;
	// the next subscribe is refused. Default 1000, at least 10.
	Subscriptions int `koanf:"subscriptions"`
	// Payload is the largest message in bytes a minted credential may publish; a larger one
	// is refused and its connection closed. Default 1048576 (1 MiB, the broker's own
	// maximum), at least 1024.
	Payload int `koanf:"payload"`
	// SpaceBytes is the JetStream storage of one space in bytes. Every stream of the space
	// has its own byte limit, and together they must fit in it. Default 2147483648 (2 GiB).
	SpaceBytes int64 `koanf:"space_bytes"`
	// DMBytes is the byte limit of the space's DM stream; past it a new DM is refused (its
	// sender gets the error) and no stored DM is evicted. The mesh's periodic pass takes back
	// DMs to ids that are no agent of the space and, once the stream is 3/4 full, DMs their
	// recipient has acknowledged. Default 268435456 (256 MiB), at least 1 MiB.
	DMBytes int64 `koanf:"dm_bytes"`
	// TaskBytes is the byte limit of the space's task (anycast) stream; past it a new task
	// is refused until pending ones are taken. Default 268435456 (256 MiB), at least 1 MiB.
	TaskBytes int64 `koanf:"task_bytes"`
	// PerSubject is the most pending tasks per role and sender (a task past it is refused).
	// DMs have no such bound: it would refuse a sender's DMs to an offline recipient long
	// before the DM stream fills; dm_bytes bounds them. Default 100000 (a producer may queue that many tasks for
	// one role before the first is taken; task_bytes bounds the whole), at least 1.
	PerSubject int64 `koanf:"per_subject"`
	// WatchConsumers is the most consumers on the presence and on the channel registry
	// bucket, where every agent creates its own watches. Default 2000, at least 10.
	WatchConsumers int `koanf:"watch_consumers"`
	// WatchesPerIdentity is the most consumers one identity may hold on the presence bucket,
	// and on the channel registry bucket; each one past it is deleted as it is created, so
	// one agent cannot take watch_consumers from the others. Default 8 (an Endpoint holds one
	// watch of each), at least 2.
	WatchesPerIdentity int `koanf:"watches_per_identity"`
	// ChannelsPerIdentity is the most channels one identity's posts may sit on in the space's
	// chat store; past it, the periodic pass deletes its posts on the channels over the count
	// (channels other senders post on are kept first) and closes its connections, so one
	// agent with a wide allow_publish cannot make every channel listing huge. Default 1000,
	// at least 10.
	ChannelsPerIdentity int `koanf:"channels_per_identity"`
	// ViolationLogInterval is how often each identity's refused publishes and subscriptions
	// may write a log line: the first is logged, the rest within the interval are counted
	// in one summary line. Default 10s; 0 logs every refusal.
	ViolationLogInterval time.Duration `koanf:"violation_log_interval"`
}

// TLS names the PEM certificate and private key of the client listener.
type TLS struct {
	// Cert is the path of the PEM certificate (chain). Default "".
	Cert string `koanf:"cert"`
	// Key is the path of the PEM private key; it is read, never logged. Default "".
	Key string `koanf:"key"`
}

// Log selects how cotal logs.
type Log struct {
	// Format is "text" (default) or "json".
	Format string `koanf:"format"`
	// Level is "debug", "info" (default), "warn" or "error".
	Level string `koanf:"level"`
}

// Default returns the defaults documented on each field. Dir is "" when the user's data
// directory cannot be determined (see DefaultDir); Validate then asks for one.
func Default() Config {
	dir, _ := DefaultDir()
	return defaults(dir)
}

func defaults(dir string) Config {
	return Config{
		Dir:          dir,
		Listen:       "127.0.0.1:4222",
		Spaces:       []string{"main"},
		Sync:         "always",
		SyncInterval: 2 * time.Minute,
		Log:          Log{Format: "text", Level: "info"},
		Expiry:       24 * time.Hour,
		Limits: Limits{Connections: 1000, ConnectionsPerIdentity: 32, Subscriptions: 1000, Payload: 1 << 20, SpaceBytes: 2 << 30,
			DMBytes: 256 << 20, TaskBytes: 256 << 20, PerSubject: 100_000, WatchConsumers: 2000, WatchesPerIdentity: 8,
			ChannelsPerIdentity: 1000, ViolationLogInterval: 10 * time.Second},
	}
}

// values is c keyed by koanf path; its keys are the only keys Load accepts.
func (c Config) values() map[string]any {
	return map[string]any{
		"dir":                c.Dir,
		"listen":             c.Listen,
		"http":               c.HTTP,
		"http_public":        c.HTTPPublic,
		"spaces":             c.Spaces,
		"tls.cert":           c.TLS.Cert,
		"tls.key":            c.TLS.Key,
		"sync":               c.Sync,
		"sync_interval":      c.SyncInterval,
		"open":               c.Open,
		"open_insecure_bind": c.OpenInsecureBind,
		"log.format":         c.Log.Format,
		"log.level":          c.Log.Level,
		"expiry":             c.Expiry,

		"limits.connections":              c.Limits.Connections,
		"limits.connections_per_identity": c.Limits.ConnectionsPerIdentity,
		"limits.subscriptions":            c.Limits.Subscriptions,
		"limits.payload":                  c.Limits.Payload,
		"limits.space_bytes":              c.Limits.SpaceBytes,
		"limits.dm_bytes":                 c.Limits.DMBytes,
		"limits.task_bytes":               c.Limits.TaskBytes,
		"limits.per_subject":              c.Limits.PerSubject,
		"limits.watch_consumers":          c.Limits.WatchConsumers,
		"limits.watches_per_identity":     c.Limits.WatchesPerIdentity,
		"limits.channels_per_identity":    c.Limits.ChannelsPerIdentity,
		"limits.violation_log_interval":   c.Limits.ViolationLogInterval,

		"cluster.name":        c.Cluster.Name,
		"cluster.listen":      c.Cluster.Listen,
		"cluster.peers":       c.Cluster.Peers,
		"cluster.server_name": c.Cluster.ServerName,
		"cluster.trust":       c.Cluster.Trust,
		"cluster.backstop":    c.Cluster.Backstop,
		"cluster.tls_cert":    c.Cluster.TLSCert,
		"cluster.tls_key":     c.Cluster.TLSKey,
		"cluster.tls_ca":      c.Cluster.TLSCA,

		"leaf.listen": c.Leaf.Listen,
		"leaf.hub":    c.Leaf.Hub,
		"leaf.creds":  c.Leaf.Creds,
	}
}

// keySet is the koanf paths Config has ("tls.cert") and the sections holding them ("tls").
type keySet struct {
	leaves, sections map[string]bool
}

func configKeys() keySet {
	k := keySet{leaves: map[string]bool{}, sections: map[string]bool{}}
	for key := range (Config{}).values() {
		k.leaves[key] = true
		if section, _, ok := strings.Cut(key, "."); ok {
			k.sections[section] = true
		}
	}
	return k
}

// String lists the keys sorted, for error messages.
// closest is the "; did you mean ...?" of a key that is not in k, or "".
func (k keySet) closest(key string) string {
	return suggest.DidYouMean(suggest.Close(key, slices.Collect(maps.Keys(k.leaves))))
}

func (k keySet) String() string {
	return strings.Join(slices.Sorted(maps.Keys(k.leaves)), ", ")
}

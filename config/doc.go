// Package config holds the one Config struct a cotal mesh runs from and loads it with koanf
// from four layers, each overriding the one before:
//
//	defaults < YAML file (cotal.yaml) < COTAL_* environment < command-line flags
//
// Load reads and validates; it does no other I/O than reading the file and checking that
// configured TLS files exist. Validate reports every problem at once, each naming the key and
// the fix, and each wrapping ErrInvalid.
//
// # Keys
//
// The koanf keys, used in cotal.yaml and in LoadOptions.Flags, are: dir, listen, http,
// http_public, spaces, tls.cert, tls.key, sync, sync_interval, open, open_insecure_bind,
// log.format, log.level, expiry, and the limits section: limits.connections,
// limits.connections_per_identity, limits.subscriptions, limits.payload, limits.space_bytes, limits.dm_bytes,
// limits.task_bytes, limits.per_subject, limits.watch_consumers,
// limits.watches_per_identity, limits.channels_per_identity and limits.violation_log_interval (see Limits for each default and why), and the cluster
// section, all empty by default: cluster.name, cluster.listen, cluster.peers,
// cluster.server_name and cluster.trust (see Cluster), and the leaf section, also empty by
// default: leaf.listen, leaf.hub and leaf.creds (see Leaf). Durations, in every layer, take the
// one syntax of ParseDuration, which the commands' duration flags share: counts with s, m, h,
// d (24h) or w (7d), combined as in "1h30m" or "1w2d", or a bare 0; a number without a unit
// is refused. Byte sizes are integers.
//
// # Open mode
//
// open: true turns authentication off. Validate then refuses a listener beyond loopback
// (127.0.0.0/8, ::1, localhost) unless open_insecure_bind: true (COTAL_OPEN_INSECURE_BIND)
// says the exposure is meant; the mesh logs a warning whenever it is.
//
// # Trust
//
// The data directory and the file decide whether the mesh authenticates at all, so neither may
// be another local user's (SPEC §9; docs/hostile-agents.md "A local user"). Load refuses a
// configuration file that another user (root aside) owns or that group or others may write,
// with ErrUnsafePath: it may already be planted, so it is not repaired. space.Start, and
// `cotal up` before it, refuse a data directory of another user and any top-level entry of
// another user, and narrow the user's own directory to 0700 when others may write it. The
// monitoring listener (http) must be a loopback address (127.0.0.0/8, ::1, localhost) unless
// http_public is set.
//
// # Where the keys go
//
// space.OptionsFromConfig is the one mapping from Config to the mesh's options (and through
// them to the key store's); every command that reads the configuration goes through it.
// config itself imports only koanf, so loading a configuration never links the broker.
//
// # Environment
//
// A variable COTAL_<NAME> sets the key <name>, lowercased. When <name> starts with a section
// name followed by an underscore (TLS_, LOG_ or LIMITS_), that first underscore is the section separator:
// COTAL_TLS_CERT sets tls.cert and COTAL_LOG_LEVEL sets log.level, while COTAL_SYNC_INTERVAL
// sets sync_interval. COTAL_SPACES is a comma-separated list ("main,ops"). COTAL_* variables that
// name no key, such as COTAL_LINK and COTAL_CREDS read by client commands, are ignored here;
// UnknownEnv lists the ones that are no one's, with the closest name, for a warning.
//
// # What it does not do
//
// A misspelled key in the file or in Flags is an error (ErrUnknownKey); a misspelled COTAL_*
// variable is ignored, because the environment is shared with the client commands.
package config

// Package config loads space.Options, the one configuration type of a cotal mesh, with koanf
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
// The keys, used in cotal.yaml and in LoadOptions.Flags, are the koanf tags of space.Options
// and of its sections, which document each default: dir, listen, http, http_public, spaces,
// tls.cert, tls.key, sync, sync_interval, open, open_insecure_bind, log.format, log.level,
// expiry; the limits section (space.Limits: limits.connections,
// limits.connections_per_identity, limits.subscriptions, limits.payload, limits.space_bytes,
// limits.dm_bytes, limits.task_bytes, limits.per_subject, limits.watch_consumers,
// limits.watches_per_identity, limits.channels_per_identity and
// limits.violation_log_interval), where a 0 count or size takes its default; the cluster
// section, all empty by default (space.ClusterOptions: cluster.name, cluster.listen,
// cluster.peers, cluster.server_name, cluster.trust, cluster.backstop, cluster.tls_cert,
// cluster.tls_key and cluster.tls_ca); and the leaf section, also empty by default
// (space.LeafOptions: leaf.listen, leaf.hub and leaf.creds). Fields tagged "-" (Logger,
// Console, Memory...) are not keys. Values writes Options back as keys.
//
// Durations, in every layer, take the one syntax of ParseDuration, which the commands'
// duration flags share: counts with s, m, h, d (24h) or w (7d), combined as in "1h30m" or
// "1w2d", or a bare 0; a number without a unit is refused. Byte sizes are integers.
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
// Load returns space.Options itself, so a key lands in the field that carries its tag and
// nothing maps one type onto another. Two keys are written in the file otherwise than their
// field holds them: limits.violation_log_interval: 0 logs every refusal, which the field spells
// as a negative interval (its zero takes the default), and leaf.creds is a list of SPACE=FILE
// entries for the field's map. config imports space, never the other way, so a program that
// embeds a mesh links neither koanf nor YAML.
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

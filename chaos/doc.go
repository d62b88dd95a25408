// Package chaos proves the delivery guarantees of SPEC §4, §7, §8 and §9 under crashes,
// faults, load and hostile input, in the manner of Jepsen: every publish is journaled by the
// process that made it, every surfacing by the receiver that surfaced it, and Check
// classifies each acknowledged publish, per receiver, as surfaced, lost or unexpected.
//
// The package holds the parts the tests and their helper processes share: the journal
// format (Journal, Entry) and the checker (Check, Figures). The tests themselves live in
// this directory in two tiers over the same test functions:
//
//   - the short tier (no build tag) runs in `make test`: a few mesh crashes, a few seconds of
//     load, ten leak-checked meshes;
//   - the long tier (`-tags chaos`, `make chaos`) runs the same tests with the numbers of
//     RELIABILITY.md, plus the receiver crashes that must wait out a consumer's 60 s ack wait
//     (docs/storage.md "Consumers") and the three-node cluster tests, on `cotal up` processes,
//     which wait out RAFT elections and the backstop lease: the kill -9 of a member, the
//     kill -9 of the key-store node that runs the backstop, and a partition that cuts the
//     key-store node off from the other two, each node in its own network namespace (root and
//     iproute2's ip; the test skips without them).
//
// The helper process chaos/internal/agentproc is a publisher or receiver connected over TCP
// with a join link and a .creds file, so that `kill -9` can hit it, or the mesh under it, at
// any instruction.
package chaos

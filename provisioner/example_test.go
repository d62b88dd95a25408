package provisioner_test

import (
	"fmt"
	"log"
	"os"

	"github.com/cotal-go/cotal/provisioner"
	"github.com/cotal-go/cotal/wire"
)

// An agent's read ACL becomes its native subscribe grants, wildcards preserved (SPEC §9).
func ExamplePermissions() {
	id := "UDTK2MEYYY33WROIB3F52XDRY3UOQ2FVWDPANSEP4ZM3VXTTO4XW6LZO"
	p, err := provisioner.Permissions(provisioner.ProfileAgent, wire.NewNames("demo"), id,
		provisioner.Grants{Subscribe: []string{"general"}, AllowSubscribe: []string{"general", "team.>"}})
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range p.Sub.Allow {
		fmt.Println(s)
	}
	// Output:
	// _INBOX_UDTK2MEYYY33WROIB3F52XDRY3UOQ2FVWDPANSEP4ZM3VXTTO4XW6LZO.>
	// cotal.demo.chat.*.general
	// cotal.demo.chat.*.team.>
	// cotal.demo.ctl.delivery.UDTK2MEYYY33WROIB3F52XDRY3UOQ2FVWDPANSEP4ZM3VXTTO4XW6LZO.>
}

// Minting an agent credential, then revoking it.
func ExampleStore_Mint() {
	dir, err := os.MkdirTemp("", "cotal-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	s, err := provisioner.Open(dir, provisioner.DefaultOptions())
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	if _, err := s.EnsureSpace("demo"); err != nil {
		log.Fatal(err)
	}
	c, err := s.Mint(provisioner.MintRequest{
		Space:   "demo",
		Name:    "ada",
		Profile: provisioner.ProfileAgent,
		Grants:  provisioner.Grants{Subscribe: []string{"general"}, AllowPublish: []string{"general"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(c.Profile, c.ExpiresAt.Sub(c.IssuedAt), c.ACL.AllowSubscribe)

	// Apply the returned account JWT to the broker; write the record's ACL to cotal_acl_demo.
	if _, err := s.Revoke("demo", c.ID); err != nil {
		log.Fatal(err)
	}
	rec, err := s.Record("demo", c.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(rec.Revoked, provisioner.ACLFor(rec).AllowSubscribe)
	// Output:
	// agent 24h0m0s [general]
	// true []
}

package config_test

import (
	"fmt"

	"github.com/cotal-go/cotal/config"
)

// ExampleLoad reads testdata/cotal.yaml, which the environment and then the flags override.
func ExampleLoad() {
	c, err := config.Load(config.LoadOptions{
		Dir:   "testdata",
		Env:   []string{"COTAL_DIR=/srv/cotal", "COTAL_LISTEN=127.0.0.1:5222", "COTAL_LINK=ignored"},
		Flags: map[string]any{"log.level": "debug"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("dir:   ", c.Dir)
	fmt.Println("listen:", c.Listen)
	fmt.Println("spaces:", c.Spaces)
	fmt.Println("sync:  ", c.Sync, c.SyncInterval)
	fmt.Println("log:   ", c.Log.Format, c.Log.Level)
	fmt.Println("expiry:", c.Expiry)
	// Output:
	// dir:    /srv/cotal
	// listen: 127.0.0.1:5222
	// spaces: [main ops]
	// sync:   interval 30s
	// log:    text debug
	// expiry: 24h0m0s
}

// ExampleValidate shows a problem named with its key and its fix.
func ExampleValidate() {
	c := config.Default()
	c.Dir = "/srv/cotal"
	c.Sync = "sometimes"
	fmt.Println(config.Validate(c))
	// Output: sync: "sometimes" is not a sync mode; use always or interval
}

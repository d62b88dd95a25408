package agentfile_test

import (
	"fmt"

	"github.com/cotal-go/cotal/internal/cli/agentfile"
)

func ExampleParse() {
	a, err := agentfile.Parse("reviewer.md", []byte(`---
name: reviewer
role: code-review
subscribe: [general, team.backend]
allowPublish: [team.backend]
---
You review changes posted on team.backend.
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s reads %v, posts to %v\n%s\n", a.Name, a.Subscribe, a.AllowPublish, a.Persona)

	_, err = agentfile.Parse("boss.md", []byte("---\nname: boss\nallowPublish: [general]\nprofile: admin\n---\n"))
	fmt.Println(err)
	// Output:
	// reviewer reads [general team.backend], posts to [team.backend]
	// You review changes posted on team.backend.
	// boss.md:4: invalid agent file: an agent file mints agent credentials only; remove `profile:`
}

// Loads a compose file with compose-go, the loader docker compose itself uses (interpolation,
// merge keys, env_file, validation against the Compose schema, normalisation), and prints the
// resolved project as JSON, or the loader's error with exit status 1.
// Usage: go run . <compose file> (the environment is the caller's; no .env is read).
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/compose-spec/compose-go/v2/cli"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: compose-config <compose file>")
		os.Exit(2)
	}
	options, err := cli.NewProjectOptions([]string{os.Args[1]}, cli.WithOsEnv, cli.WithName("check"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	project, err := options.LoadProject(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out, err := project.MarshalJSON()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(string(out))
}

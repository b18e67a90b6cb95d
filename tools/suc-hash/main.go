// Command secret-hash prints, one per line, kubectl's SecretHash of each Secret in the JSON list on its
// standard input: the real k8s.io/kubectl/pkg/util/hash that system-upgrade-controller hashes a Plan's
// Secrets with, so nuo's TypeScript SecretHash is checked against it.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/kubectl/pkg/util/hash"
)

func main() {
	var secrets []corev1.Secret
	if err := json.NewDecoder(os.Stdin).Decode(&secrets); err != nil {
		fmt.Fprintf(os.Stderr, "secret-hash: reading a JSON list of Secrets from stdin: %v\n", err)
		os.Exit(2)
	}
	for i := range secrets {
		h, err := hash.SecretHash(&secrets[i])
		if err != nil {
			fmt.Fprintf(os.Stderr, "secret-hash: Secret %d (%s): %v\n", i, secrets[i].Name, err)
			os.Exit(1)
		}
		fmt.Println(h)
	}
}

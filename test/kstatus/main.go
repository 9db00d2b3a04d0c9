// Command kstatus prints the verdict of kstatus (sigs.k8s.io/cli-utils/pkg/kstatus/status),
// the library Flux's kustomize-controller and `flux` CLI read health with, for each object
// of a JSON array on stdin: a JSON array of {"status", "message"}, in the same order.
// The Python tests (test/unit/controller/test_s2_kstatus.py) build and run it.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

type verdict struct {
	Status  string `json:"status"`
	Message string `json:"message"`
}

func main() {
	var raws []json.RawMessage
	if err := json.NewDecoder(os.Stdin).Decode(&raws); err != nil {
		fmt.Fprintln(os.Stderr, "reading objects:", err)
		os.Exit(2)
	}
	verdicts := make([]verdict, 0, len(raws))
	for _, raw := range raws {
		// apimachinery's decoder, as the API client's: integers as int64 (encoding/json's
		// float64 fails kstatus's metadata.generation accessor).
		object := map[string]interface{}{}
		if err := utiljson.Unmarshal(raw, &object); err != nil {
			fmt.Fprintln(os.Stderr, "reading an object:", err)
			os.Exit(2)
		}
		result, err := status.Compute(&unstructured.Unstructured{Object: object})
		if err != nil {
			fmt.Fprintln(os.Stderr, "computing status:", err)
			os.Exit(1)
		}
		verdicts = append(verdicts, verdict{Status: result.Status.String(), Message: result.Message})
	}
	if err := json.NewEncoder(os.Stdout).Encode(verdicts); err != nil {
		fmt.Fprintln(os.Stderr, "writing verdicts:", err)
		os.Exit(1)
	}
}

//go:build tools

// The real kube-apiserver the k8s tests run agentprof against, built from the Go module
// proxy: this module only pins k8s.io/kubernetes and its staging modules at one release.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver/app"

# The one place the real control plane's versions are pinned (sourced by scripts/kube-tools.sh,
# scripts/realkube.sh and the tests' fixture through them).
#
# Kubernetes v1.37.2: the newest release the Go module proxy serves that the machines' Go 1.26
# builds (its go.mod asks for go 1.26.0). etcd is the version that release's go.mod requires.
# Helm v3.22.0 is the newest Helm 3; kwok v0.8.0 runs the fake nodes. promtool checks and tests
# the chart's alerting rules; Prometheus 3.16's module is github.com/prometheus/prometheus v0.316.0.
KUBERNETES_VERSION=v1.37.2
HELM_VERSION=v3.22.0
KWOK_VERSION=v0.8.0
PROMETHEUS_VERSION=v0.316.0

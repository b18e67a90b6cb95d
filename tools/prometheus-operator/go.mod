// prometheus-operator's CRDs (ServiceMonitor, PrometheusRule), pinned to one release: the chart's install
// test creates them so that the API server validates nuo's ServiceMonitor and PrometheusRule against
// their real schemas. Only downloaded (crds.ts), never built.
module nuo.dev/tools/prometheus-operator

go 1.26.0

require github.com/prometheus-operator/prometheus-operator v0.85.0

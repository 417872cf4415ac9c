module wirespeed.test/k8s-testenv/dashcheck

go 1.26

require github.com/grafana/grafana-foundation-sdk/go v0.0.22

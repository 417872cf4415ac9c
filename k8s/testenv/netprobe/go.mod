module wirespeed.test/k8s-testenv/netprobe

go 1.24.0

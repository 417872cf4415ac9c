{{/*
The labels of every object's metadata: those `wirespeed k8s watch
manifests` gives, then Helm's release and chart.
*/}}
{{- define "wirespeed.labels" -}}
app.kubernetes.io/managed-by: wirespeed
app.kubernetes.io/instance: {{ .Release.Name }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The Secret holding the fleet key under `key`. */}}
{{- define "wirespeed.keySecret" -}}
{{- .Values.key.existingSecret | default "wirespeed-key" -}}
{{- end -}}

{{/*
The fleet key the chart keeps in wirespeed-key: the one already there
(an upgrade keeps it), else 64 random characters; made once per render
and shared by every template that needs it.
*/}}
{{- define "wirespeed.key" -}}
{{- if not (hasKey .Values "__generatedKey") -}}
{{- $old := lookup "v1" "Secret" .Release.Namespace "wirespeed-key" -}}
{{- $key := randAlphaNum 64 -}}
{{- if and $old (hasKey ($old.data | default dict) "key") -}}
{{- $key = index $old.data "key" | b64dec -}}
{{- end -}}
{{- $_ := set .Values "__generatedKey" $key -}}
{{- end -}}
{{- index .Values "__generatedKey" -}}
{{- end -}}

{{/*
The key's SHA-256 (hex), which pod templates carry so a new key rolls
them; empty for an existing Secret the chart cannot read (helm template).
*/}}
{{- define "wirespeed.keyDigest" -}}
{{- if .Values.key.existingSecret -}}
{{- $s := lookup "v1" "Secret" .Release.Namespace .Values.key.existingSecret -}}
{{- if and $s (hasKey ($s.data | default dict) "key") -}}
{{- index $s.data "key" | b64dec | trim | sha256sum -}}
{{- end -}}
{{- else -}}
{{- include "wirespeed.key" . | sha256sum -}}
{{- end -}}
{{- end -}}

{{/* The pod template annotations: the key's digest, when known. */}}
{{- define "wirespeed.podAnnotations" -}}
{{- $d := include "wirespeed.keyDigest" . -}}
{{- if $d }}
annotations:
  wirespeed.dev/key-sha256: {{ $d }}
{{- end -}}
{{- end -}}

{{/* The data ports, LO and HI, as numbers. */}}
{{- define "wirespeed.dataPortLo" -}}
{{- index (splitList "-" .Values.dataPorts) 0 | int -}}
{{- end -}}
{{- define "wirespeed.dataPortHi" -}}
{{- index (splitList "-" .Values.dataPorts) 1 | int -}}
{{- end -}}

{{/* The pod security context of every wirespeed pod (the image's user). */}}
{{- define "wirespeed.podSecurity" -}}
fsGroup: 65532
runAsGroup: 65532
runAsUser: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* The container security context: Pod Security `restricted`. */}}
{{- define "wirespeed.containerSecurity" -}}
allowPrivilegeEscalation: false
capabilities:
  drop:
  - ALL
readOnlyRootFilesystem: true
runAsNonRoot: true
{{- end -}}

{{/* The volume `key`: the key's Secret, readable by the pod's group. */}}
{{- define "wirespeed.keyVolume" -}}
- name: key
  secret:
    defaultMode: 288
    items:
    - key: key
      path: key
    secretName: {{ include "wirespeed.keySecret" . }}
{{- end -}}

{{/* The watcher's history claim, if any. */}}
{{- define "wirespeed.historyClaim" -}}
{{- if .Values.watch.history.existingClaim -}}
{{- .Values.watch.history.existingClaim -}}
{{- else if .Values.watch.history.persistence.enabled -}}
wirespeed-history
{{- end -}}
{{- end -}}

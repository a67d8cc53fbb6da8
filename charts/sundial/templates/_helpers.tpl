{{/* The chart name. */}}
{{- define "sundial.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The full name: <release>-<chart>, or <release> when it already contains the chart name. */}}
{{- define "sundial.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "sundial.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "sundial.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: sundial
{{- end }}

{{/* Labels of helm test's objects: the release's, with component "check" (so the operator's selector never
matches the check pod). */}}
{{- define "sundial.checkLabels" -}}
{{- $labels := include "sundial.labels" . | fromYaml }}
{{- $_ := set $labels "app.kubernetes.io/component" "check" }}
{{- toYaml $labels }}
{{- end }}

{{/* Labels that select the operator pods. */}}
{{- define "sundial.selectorLabels" -}}
app.kubernetes.io/name: {{ include "sundial.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end }}

{{/* The ServiceAccount's name. */}}
{{- define "sundial.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "sundial.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The image reference: repository@digest, or repository:tag (default: appVersion). */}}
{{- define "sundial.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* The operator's API access (everything but Leases), shared by the ClusterRole and the namespaced Roles. */}}
{{- define "sundial.operatorRules" -}}
# Watch ScheduledJobs; delete one-offs after ttlSecondsAfterFinished. Never update or patch them: the
# operator does not edit spec, metadata or finalizers of user objects.
- apiGroups: [sundial.dev]
  resources: [scheduledjobs]
  verbs: [get, list, watch, delete]
# Status only through the subresource, each write a compare-and-set.
- apiGroups: [sundial.dev]
  resources: [scheduledjobs/status]
  verbs: [get, update, patch]
# Not an endpoint the operator calls: the OwnerReferencesPermissionEnforcement admission plugin (on in
# OpenShift) lets a Job name its ScheduledJob with blockOwnerDeletion only for who may update its finalizers.
- apiGroups: [sundial.dev]
  resources: [scheduledjobs/finalizers]
  verbs: [update]
# Watch ScheduleCalendars (spec.calendarRefs); read only.
- apiGroups: [sundial.dev]
  resources: [schedulecalendars]
  verbs: [get, list, watch]
# One Job per attempt; concurrencyPolicy Replace and the history limits delete Jobs (patch: the
# sundial.dev/shard label is set to the owner's current shard right before a delete, docs/fencing.md).
- apiGroups: [batch]
  resources: [jobs]
  verbs: [get, list, watch, create, patch, delete]
# Events on ScheduledJobs.
- apiGroups: [""]
  resources: [events]
  verbs: [create, patch]
- apiGroups: [events.k8s.io]
  resources: [events]
  verbs: [create, patch]
{{- end }}

{{/* Checks of values that the schema cannot express. */}}
{{- define "sundial.validate" -}}
{{- $le := .Values.leaderElection }}
{{- if not (and (lt (float64 $le.retryPeriod) (float64 $le.renewDeadline)) (lt (float64 $le.renewDeadline) (float64 $le.leaseDuration))) }}
{{- fail "leaderElection: need retryPeriod < renewDeadline < leaseDuration" }}
{{- end }}
{{- $oc := .Values.webhook.operatorCertificate }}
{{- if lt (int $oc.caValidityDays) (int $oc.validityDays) }}
{{- fail "webhook.operatorCertificate: need validityDays <= caValidityDays" }}
{{- end }}
{{- end }}

{{/* The webhook Service's name. */}}
{{- define "sundial.webhookServiceName" -}}
{{- printf "%s-webhook" (include "sundial.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The Secret cert-manager writes the webhook's serving certificate to (tls.crt, tls.key, ca.crt). */}}
{{- define "sundial.webhookSecretName" -}}
{{- printf "%s-webhook-tls" (include "sundial.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The Secret the operator keeps its own webhook CA and certificate in (webhook.operatorCertificate). */}}
{{- define "sundial.webhookCertificateSecretName" -}}
{{- printf "%s-webhook-certificate" (include "sundial.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Whether the operator manages the webhook's certificate itself (the webhook is on, cert-manager is not). */}}
{{- define "sundial.operatorCertificate" -}}
{{- if and .Values.webhook.enabled (not .Values.webhook.certManager.enabled) }}true{{ end }}
{{- end }}

{{/* The DNS names the API server may use for the webhook Service. */}}
{{- define "sundial.webhookDNSNames" -}}
{{- $service := include "sundial.webhookServiceName" . }}
{{- $ns := .Release.Namespace }}
{{- toJson (list $service (printf "%s.%s" $service $ns) (printf "%s.%s.svc" $service $ns) (printf "%s.%s.svc.cluster.local" $service $ns)) }}
{{- end }}

{{/* Where the webhook's certificate Secret is mounted in the operator container. */}}
{{- define "sundial.webhookCertDir" -}}
/etc/sundial/webhook
{{- end }}

{{/* kopf serves the handler at /<handler id>: sundial.runtime.admission.WEBHOOK_PATH (a unit test checks). */}}
{{- define "sundial.webhookPath" -}}
/validate-scheduledjob
{{- end }}

{{/*
The ScheduleCalendar webhook's path (sundial.runtime.serving.admission.CALENDAR_WEBHOOK_PATH).
*/}}
{{- define "sundial.calendarWebhookPath" -}}
/validate-schedulecalendar
{{- end }}

package controllers

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podrun/podrun/store"
)

var deploymentKind = &Kind{Store: store.DeploymentKind, Sync: syncDeployment}

// The deployment controller's annotations and condition reasons
// (pkg/controller/deployment/util/deployment_util.go).
const (
	RevisionAnnotation        = "deployment.kubernetes.io/revision"
	DesiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	MaxReplicasAnnotation     = "deployment.kubernetes.io/max-replicas"
	RevisionHistoryAnnotation = "deployment.kubernetes.io/revision-history"
	// RestartedAtAnnotation is what `rollout restart` sets on the pod
	// template (kubectl's objectrestarter).
	RestartedAtAnnotation = "kubectl.kubernetes.io/restartedAt"
	// ChangeCauseAnnotation is the CHANGE-CAUSE of `rollout history`.
	ChangeCauseAnnotation = "kubernetes.io/change-cause"
	lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"
	deprecatedRollbackTo  = "deprecated.deployment.rollback.to"

	ReasonNewRSAvailable      = "NewReplicaSetAvailable"
	ReasonRSUpdated           = "ReplicaSetUpdated"
	ReasonNewRSCreated        = "NewReplicaSetCreated"
	ReasonFoundNewRS          = "FoundNewReplicaSet"
	ReasonTimedOut            = "ProgressDeadlineExceeded"
	ReasonMinimumAvailable    = "MinimumReplicasAvailable"
	ReasonMinimumNotAvailable = "MinimumReplicasUnavailable"
	ReasonPaused              = "DeploymentPaused"
	ReasonResumed             = "DeploymentResumed"
)

// AnnotationsToSkip are the Deployment's annotations that are not copied to
// its ReplicaSets, nor back on a rollback (deploymentutil.annotationsToSkip).
var AnnotationsToSkip = map[string]bool{
	lastAppliedAnnotation:     true,
	RevisionAnnotation:        true,
	RevisionHistoryAnnotation: true,
	DesiredReplicasAnnotation: true,
	MaxReplicasAnnotation:     true,
	deprecatedRollbackTo:      true,
}

// Revision is a ReplicaSet's (or a Deployment's) revision number
// (deploymentutil.Revision); 0 when it has none.
func Revision(o metav1.Object) int64 {
	r, _ := strconv.ParseInt(o.GetAnnotations()[RevisionAnnotation], 10, 64)
	return r
}

// ResolveFenceposts is the deployment controller's ResolveFenceposts: maxSurge
// and maxUnavailable as numbers of pods for desired replicas, percentages
// rounded up for the surge and down for unavailability; both 0 makes
// unavailability 1.
func ResolveFenceposts(maxSurge, maxUnavailable *intstr.IntOrString, desired int32) (int32, int32, error) {
	zero := intstr.FromInt32(0)
	surge, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(maxSurge, zero), int(desired), true)
	if err != nil {
		return 0, 0, err
	}
	unavailable, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(maxUnavailable, zero), int(desired), false)
	if err != nil {
		return 0, 0, err
	}
	if surge == 0 && unavailable == 0 {
		unavailable = 1
	}
	return int32(surge), int32(unavailable), nil
}

// MaxUnavailable is deploymentutil.MaxUnavailable.
func MaxUnavailable(d *appsv1.Deployment) int32 {
	desired := replicas(d.Spec.Replicas)
	if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || desired == 0 {
		return 0
	}
	_, u, _ := ResolveFenceposts(d.Spec.Strategy.RollingUpdate.MaxSurge, d.Spec.Strategy.RollingUpdate.MaxUnavailable, desired)
	return min(u, desired)
}

// MaxSurge is deploymentutil.MaxSurge.
func MaxSurge(d *appsv1.Deployment) int32 {
	if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType {
		return 0
	}
	s, _, _ := ResolveFenceposts(d.Spec.Strategy.RollingUpdate.MaxSurge, d.Spec.Strategy.RollingUpdate.MaxUnavailable, replicas(d.Spec.Replicas))
	return s
}

func replicas(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}

func specReplicas(rss []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range rss {
		if rs != nil {
			n += replicas(rs.Spec.Replicas)
		}
	}
	return n
}

// NewRSNewReplicas is the new ReplicaSet's size in a RollingUpdate step
// (deploymentutil.NewRSNewReplicas): up to desired, while every
// ReplicaSet's replicas together stay within desired + maxSurge.
func NewRSNewReplicas(d *appsv1.Deployment, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) int32 {
	cur := replicas(newRS.Spec.Replicas)
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		return replicas(d.Spec.Replicas)
	}
	maxTotal := replicas(d.Spec.Replicas) + MaxSurge(d)
	total := specReplicas(all)
	if total >= maxTotal {
		return cur
	}
	up := min(maxTotal-total, replicas(d.Spec.Replicas)-cur)
	return cur + max(up, 0)
}

// deploymentState is one sync's view of a Deployment's ReplicaSets.
type deploymentState struct {
	c      *Context
	d      *appsv1.Deployment
	newRS  *appsv1.ReplicaSet
	oldRSs []*appsv1.ReplicaSet // oldest first
}

func (s *deploymentState) all() []*appsv1.ReplicaSet {
	if s.newRS == nil {
		return s.oldRSs
	}
	return append(append([]*appsv1.ReplicaSet(nil), s.oldRSs...), s.newRS)
}

// syncDeployment is the deployment controller's syncDeployment: find or make
// the ReplicaSet of the current template, roll out by the strategy, drop old
// ReplicaSets beyond revisionHistoryLimit, and write the status.
func syncDeployment(c *Context, obj store.Object) error {
	d := obj.(*appsv1.Deployment)
	s := &deploymentState{c: c, d: d}
	objs, _ := c.L.List(store.ReplicaSetKind, d.Namespace)
	if err := claimReplicaSets(c, d, objs); err != nil {
		return err
	}
	for _, o := range objs {
		rs := o.(*appsv1.ReplicaSet)
		if ref := metav1.GetControllerOf(rs); ref == nil || ref.UID != d.UID {
			continue
		}
		if s.newRS == nil && EqualIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
			s.newRS = rs
			continue
		}
		s.oldRSs = append(s.oldRSs, rs)
	}
	sort.SliceStable(s.oldRSs, func(i, j int) bool {
		return s.oldRSs[i].CreationTimestamp.Before(&s.oldRSs[j].CreationTimestamp)
	})
	var reason, msg string
	var err error
	if d.Spec.Paused || s.isScalingEvent() {
		// sync (sync.go): a paused Deployment, or one just scaled
		// (isScalingEvent), is scaled, never rolled out; no ReplicaSet is
		// made for a changed template.
		err = s.scalePaused()
	} else {
		switch d.Spec.Strategy.Type {
		case appsv1.RecreateDeploymentStrategyType:
			reason, msg, err = s.rolloutRecreate()
		default:
			reason, msg, err = s.rolloutRolling()
		}
	}
	if err == nil {
		err = s.syncRevision()
	}
	if serr := s.syncStatus(reason, msg); err == nil {
		err = serr
	}
	return err
}

// scalePaused is the deployment controller's sync (sync.go) for a paused
// Deployment or a scaling event (isScalingEvent): the ReplicaSets are
// scaled, never rolled out, with no new ReplicaSet made.
func (s *deploymentState) scalePaused() error {
	return s.scaleAll()
}

// isScalingEvent is the deployment controller's isScalingEvent: an active
// ReplicaSet whose desired-replicas annotation is not the Deployment's
// replicas means the Deployment was scaled.
func (s *deploymentState) isScalingEvent() bool {
	for _, rs := range activeReplicaSets(s.all()) {
		v, ok := rs.Annotations[DesiredReplicasAnnotation]
		if !ok {
			continue
		}
		if n, err := strconv.Atoi(v); err == nil && int32(n) != replicas(s.d.Spec.Replicas) {
			return true
		}
	}
	return false
}

func activeReplicaSets(rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range rss {
		if rs != nil && replicas(rs.Spec.Replicas) > 0 {
			out = append(out, rs)
		}
	}
	return out
}

// scaleAll is the deployment controller's scale (sync.go): one active (or
// else the latest) ReplicaSet gets the Deployment's replicas; a saturated
// new one leaves the old ones at 0; otherwise, for RollingUpdate, the
// replicas to add or remove (desired + maxSurge - the ReplicaSets' sum) are
// shared in proportion to each active ReplicaSet's size
// (GetReplicaSetProportion), the leftover going to the largest.
func (s *deploymentState) scaleAll() error {
	desired := replicas(s.d.Spec.Replicas)
	// FindActiveOrLatest
	active := activeReplicaSets(s.all())
	switch {
	case len(active) == 1:
		return s.scale(active[0], desired)
	case len(active) == 0 && s.newRS != nil:
		return s.scale(s.newRS, desired)
	case len(active) == 0 && len(s.oldRSs) > 0:
		return s.scale(s.oldRSs[len(s.oldRSs)-1], desired) // the newest
	case len(active) == 0:
		return nil
	}
	// IsSaturated
	if rs := s.newRS; rs != nil && replicas(rs.Spec.Replicas) == desired &&
		rs.Annotations[DesiredReplicasAnnotation] == strconv.Itoa(int(desired)) && rs.Status.AvailableReplicas == desired {
		for _, old := range activeReplicaSets(s.oldRSs) {
			if err := s.scale(old, 0); err != nil {
				return err
			}
		}
		return nil
	}
	if s.d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		return nil
	}
	allowed := int32(0)
	if desired > 0 {
		allowed = desired + MaxSurge(s.d)
	}
	toAdd := allowed - specReplicas(active)
	// ReplicaSetsBySizeNewer when scaling up, BySizeOlder when down: the
	// largest first, ties by age.
	sort.SliceStable(active, func(i, j int) bool {
		a, b := active[i], active[j]
		if replicas(a.Spec.Replicas) != replicas(b.Spec.Replicas) {
			return replicas(a.Spec.Replicas) > replicas(b.Spec.Replicas)
		}
		if toAdd > 0 {
			return b.CreationTimestamp.Before(&a.CreationTimestamp)
		}
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	})
	sizes := make([]int32, len(active))
	var added int32
	for i, rs := range active {
		sizes[i] = replicas(rs.Spec.Replicas)
		if toAdd != 0 {
			p := s.replicaSetProportion(rs, toAdd, added)
			sizes[i] += p
			added += p
		}
	}
	for i, rs := range active {
		if i == 0 && toAdd != 0 {
			sizes[0] = max(sizes[0]+toAdd-added, 0)
		}
		if err := s.scale(rs, sizes[i]); err != nil {
			return err
		}
	}
	return nil
}

// replicaSetProportion is deploymentutil.GetReplicaSetProportion with
// getReplicaSetFraction: the ReplicaSet's share of the Deployment's new
// max replicas against those of its max-replicas annotation, bounded by
// what is left to add or remove.
func (s *deploymentState) replicaSetProportion(rs *appsv1.ReplicaSet, toAdd, added int32) int32 {
	cur := replicas(rs.Spec.Replicas)
	if cur == 0 || toAdd == 0 || toAdd == added {
		return 0
	}
	desired := replicas(s.d.Spec.Replicas)
	var fraction int32
	if desired == 0 {
		fraction = -cur
	} else {
		maxNow := desired + MaxSurge(s.d)
		before := int32(0)
		if n, err := strconv.Atoi(rs.Annotations[MaxReplicasAnnotation]); err == nil {
			before = int32(n)
		}
		if before == 0 {
			before = s.d.Status.Replicas
		}
		if before == 0 {
			before = maxNow
		}
		fraction = int32(math.Round(float64(cur*maxNow)/float64(before))) - cur
	}
	allowed := toAdd - added
	if toAdd > 0 {
		return min(fraction, allowed)
	}
	return max(fraction, allowed)
}

// syncRevision writes the new ReplicaSet's revision on the Deployment
// (SetDeploymentRevision in getNewReplicaSet).
func (s *deploymentState) syncRevision() error {
	if s.newRS == nil {
		return nil
	}
	rev := s.newRS.Annotations[RevisionAnnotation]
	if rev == "" || s.d.Annotations[RevisionAnnotation] == rev {
		return nil
	}
	err := s.c.UpdateStatus(store.DeploymentKind, s.d, func(cur store.Object) bool {
		if cur.GetAnnotations()[RevisionAnnotation] == rev {
			return false
		}
		setAnnotation(cur, RevisionAnnotation, rev)
		return true
	})
	if err == nil {
		setAnnotation(s.d, RevisionAnnotation, rev)
	}
	return err
}

// ensureNewRS makes the ReplicaSet of the current template when there is
// none (getNewReplicaSet), named <deployment>-<ComputeHash>, with the
// pod-template-hash label on its selector, template and labels, and the next
// revision; a name taken by another template bumps status.collisionCount.
func (s *deploymentState) ensureNewRS() (string, string, error) {
	d := s.d
	maxRev := int64(0)
	for _, rs := range s.oldRSs {
		if r, err := strconv.ParseInt(rs.Annotations[RevisionAnnotation], 10, 64); err == nil && r > maxRev {
			maxRev = r
		}
	}
	if s.newRS != nil {
		// A template rolled back to: its ReplicaSet gets the next revision,
		// the one it had goes to its revision history, and the
		// Deployment's annotations are copied again
		// (SetNewReplicaSetAnnotations).
		if r := Revision(s.newRS); r <= maxRev {
			err := s.c.L.Update(store.ReplicaSetKind, d.Namespace, s.newRS.Name, func(o store.Object) error {
				setReplicaSetAnnotations(d, o, maxRev+1)
				return nil
			})
			if err == nil {
				if o, gerr := s.c.L.Get(store.ReplicaSetKind, d.Namespace, s.newRS.Name); gerr == nil {
					s.newRS = o.(*appsv1.ReplicaSet)
				}
			}
			return "", "", err
		}
		return "", "", nil
	}
	hash := ComputeHash(&d.Spec.Template, d.Status.CollisionCount)
	tmpl := d.Spec.Template.DeepCopy()
	if tmpl.Labels == nil {
		tmpl.Labels = map[string]string{}
	}
	tmpl.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	sel := d.Spec.Selector.DeepCopy()
	if sel.MatchLabels == nil {
		sel.MatchLabels = map[string]string{}
	}
	sel.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	zero := int32(0)
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: d.Name + "-" + hash, Namespace: d.Namespace, Labels: tmpl.Labels,
			Annotations: map[string]string{
				DesiredReplicasAnnotation: strconv.Itoa(int(replicas(d.Spec.Replicas))),
				MaxReplicasAnnotation:     strconv.Itoa(int(replicas(d.Spec.Replicas) + MaxSurge(d))),
			},
			OwnerReferences: []metav1.OwnerReference{ControllerRef(store.DeploymentKind, d)},
		},
		Spec: appsv1.ReplicaSetSpec{Replicas: &zero, MinReadySeconds: d.Spec.MinReadySeconds, Selector: sel, Template: *tmpl},
	}
	setReplicaSetAnnotations(d, rs, maxRev+1)
	if existing, err := s.c.L.Get(store.ReplicaSetKind, d.Namespace, rs.Name); err == nil {
		// The name is another template's (a hash collision): the next name.
		if ref := metav1.GetControllerOf(existing); ref == nil || ref.UID != d.UID || !EqualIgnoreHash(&existing.(*appsv1.ReplicaSet).Spec.Template, &d.Spec.Template) {
			err := s.c.UpdateStatus(store.DeploymentKind, d, func(cur store.Object) bool {
				cd := cur.(*appsv1.Deployment)
				n := int32(1)
				if cd.Status.CollisionCount != nil {
					n = *cd.Status.CollisionCount + 1
				}
				cd.Status.CollisionCount = &n
				return true
			})
			if err == nil {
				err = fmt.Errorf("replica set %q already exists with another template; collisionCount raised", rs.Name)
			}
			return "", "", err
		}
	}
	if _, err := s.c.L.PutWithSettings(store.ReplicaSetKind, rs, s.c.L.ObjectSettings(store.DeploymentKind, d.Namespace, d.Name)); err != nil {
		return "", "", err
	}
	stored, err := s.c.L.Get(store.ReplicaSetKind, d.Namespace, rs.Name)
	if err != nil {
		return "", "", err
	}
	s.newRS = stored.(*appsv1.ReplicaSet)
	s.c.Log.Info("created replica set", "deployment", d.Namespace+"/"+d.Name, "replicaset", rs.Name)
	return ReasonNewRSCreated, fmt.Sprintf("Created new replica set %q", rs.Name), nil
}

// setReplicaSetAnnotations is deploymentutil.SetNewReplicaSetAnnotations:
// the Deployment's annotations (but AnnotationsToSkip) copied to its new
// ReplicaSet, which gets revision rev; a revision it had before is appended
// to its revision-history annotation.
func setReplicaSetAnnotations(d *appsv1.Deployment, rs store.Object, rev int64) {
	for k, v := range d.Annotations {
		if !AnnotationsToSkip[k] {
			setAnnotation(rs, k, v)
		}
	}
	old := rs.GetAnnotations()[RevisionAnnotation]
	if o, _ := strconv.ParseInt(old, 10, 64); old != "" && o < rev {
		hist := rs.GetAnnotations()[RevisionHistoryAnnotation]
		if hist == "" {
			hist = old
		} else {
			hist += "," + old
		}
		setAnnotation(rs, RevisionHistoryAnnotation, hist)
	}
	setAnnotation(rs, RevisionAnnotation, strconv.FormatInt(rev, 10))
}

func setAnnotation(o store.Object, k, v string) {
	a := o.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[k] = v
	o.SetAnnotations(a)
}

// scale sets a ReplicaSet's replicas (scaleReplicaSet), with the
// Deployment's desired and max replicas annotations.
func (s *deploymentState) scale(rs *appsv1.ReplicaSet, n int32) error {
	// scaleReplicaSet: the annotations are brought up to date even when
	// the size stays.
	want, wantMax := strconv.Itoa(int(replicas(s.d.Spec.Replicas))), strconv.Itoa(int(replicas(s.d.Spec.Replicas)+MaxSurge(s.d)))
	if replicas(rs.Spec.Replicas) == n && rs.Annotations[DesiredReplicasAnnotation] == want && rs.Annotations[MaxReplicasAnnotation] == wantMax {
		return nil
	}
	s.c.Log.Info("scaling replica set", "replicaset", rs.Namespace+"/"+rs.Name, "from", replicas(rs.Spec.Replicas), "to", n)
	err := s.c.L.Update(store.ReplicaSetKind, rs.Namespace, rs.Name, func(o store.Object) error {
		r := o.(*appsv1.ReplicaSet)
		if replicas(r.Spec.Replicas) != n {
			r.Generation++
		}
		r.Spec.Replicas = &n
		setAnnotation(r, DesiredReplicasAnnotation, want)
		setAnnotation(r, MaxReplicasAnnotation, wantMax)
		return nil
	})
	if err == nil {
		rs.Spec.Replicas = &n
		setAnnotation(rs, DesiredReplicasAnnotation, want)
		setAnnotation(rs, MaxReplicasAnnotation, wantMax)
	}
	return err
}

// rolloutRolling is rolloutRolling (rolling.go): scale the new ReplicaSet up
// within maxSurge, then the old ones down within maxUnavailable.
func (s *deploymentState) rolloutRolling() (string, string, error) {
	reason, msg, err := s.ensureNewRS()
	if err != nil {
		return "", "", err
	}
	desired := replicas(s.d.Spec.Replicas)
	// reconcileNewReplicaSet
	cur := replicas(s.newRS.Spec.Replicas)
	switch {
	case cur > desired:
		return reason, msg, s.scale(s.newRS, desired)
	case cur < desired:
		if n := NewRSNewReplicas(s.d, s.all(), s.newRS); n != cur {
			return reason, msg, s.scale(s.newRS, n)
		}
	}
	// reconcileOldReplicaSets
	if specReplicas(s.oldRSs) == 0 {
		if complete(s.d, s.d.Status) {
			return reason, msg, s.cleanup()
		}
		return reason, msg, nil
	}
	minAvailable := desired - MaxUnavailable(s.d)
	newUnavailable := replicas(s.newRS.Spec.Replicas) - s.newRS.Status.AvailableReplicas
	maxScaledDown := specReplicas(s.all()) - minAvailable - newUnavailable
	if maxScaledDown <= 0 {
		return reason, msg, nil
	}
	// cleanupUnhealthyReplicas: old replicas that are not available go first.
	var done int32
	for _, rs := range s.oldRSs {
		if done >= maxScaledDown {
			break
		}
		r := replicas(rs.Spec.Replicas)
		if r == 0 || r == rs.Status.AvailableReplicas {
			continue
		}
		down := min(maxScaledDown-done, r-rs.Status.AvailableReplicas)
		if err := s.scale(rs, r-down); err != nil {
			return reason, msg, err
		}
		done += down
	}
	// scaleDownOldReplicaSetsForRollingUpdate: then available ones, while
	// minAvailable stay available.
	var available int32
	for _, rs := range s.all() {
		available += rs.Status.AvailableReplicas
	}
	if available <= minAvailable {
		return reason, msg, nil
	}
	total := available - minAvailable
	var scaled int32
	for _, rs := range s.oldRSs {
		if scaled >= total {
			break
		}
		r := replicas(rs.Spec.Replicas)
		if r == 0 {
			continue
		}
		down := min(r, total-scaled)
		if err := s.scale(rs, r-down); err != nil {
			return reason, msg, err
		}
		scaled += down
	}
	return reason, msg, nil
}

// rolloutRecreate is rolloutRecreate (recreate.go): every old ReplicaSet to
// 0, and the new one scaled up only once no old pod remains (terminating
// ones included).
func (s *deploymentState) rolloutRecreate() (string, string, error) {
	for _, rs := range s.oldRSs {
		if err := s.scale(rs, 0); err != nil {
			return "", "", err
		}
	}
	for _, rs := range s.oldRSs {
		if rs.Status.Replicas > 0 {
			return "", "", nil
		}
		for _, p := range s.c.AllOwnedPods(rs.UID) {
			if p.Status.Phase != corev1.PodFailed && p.Status.Phase != corev1.PodSucceeded {
				return "", "", nil
			}
		}
	}
	reason, msg, err := s.ensureNewRS()
	if err != nil {
		return "", "", err
	}
	if err := s.scale(s.newRS, replicas(s.d.Spec.Replicas)); err != nil {
		return reason, msg, err
	}
	if complete(s.d, s.d.Status) {
		return reason, msg, s.cleanup()
	}
	return reason, msg, nil
}

// cleanup deletes the old ReplicaSets beyond revisionHistoryLimit that have
// no pods, lowest revision first (cleanupDeployment).
func (s *deploymentState) cleanup() error {
	if s.d.Spec.RevisionHistoryLimit == nil {
		return nil
	}
	var cleanable []*appsv1.ReplicaSet
	for _, rs := range s.oldRSs {
		if replicas(rs.Spec.Replicas) == 0 && rs.Status.Replicas == 0 && rs.Status.ObservedGeneration >= rs.Generation {
			cleanable = append(cleanable, rs)
		}
	}
	diff := len(cleanable) - int(*s.d.Spec.RevisionHistoryLimit)
	if diff <= 0 {
		return nil
	}
	rev := func(rs *appsv1.ReplicaSet) int64 {
		r, _ := strconv.ParseInt(rs.Annotations[RevisionAnnotation], 10, 64)
		return r
	}
	sort.SliceStable(cleanable, func(i, j int) bool { return rev(cleanable[i]) < rev(cleanable[j]) })
	for _, rs := range cleanable[:diff] {
		if err := s.c.L.Remove(store.ReplicaSetKind, rs.Namespace, rs.Name); err != nil {
			return err
		}
	}
	return nil
}

// complete is deploymentutil.DeploymentComplete.
func complete(d *appsv1.Deployment, st appsv1.DeploymentStatus) bool {
	desired := replicas(d.Spec.Replicas)
	return st.UpdatedReplicas == desired && st.Replicas == desired && st.AvailableReplicas == desired && st.ObservedGeneration >= d.Generation
}

// progressing is deploymentutil.DeploymentProgressing.
func progressing(d *appsv1.Deployment, st appsv1.DeploymentStatus) bool {
	old := d.Status
	return st.UpdatedReplicas > old.UpdatedReplicas || st.Replicas-st.UpdatedReplicas < old.Replicas-old.UpdatedReplicas ||
		st.ReadyReplicas > old.ReadyReplicas || st.AvailableReplicas > old.AvailableReplicas
}

// DeploymentStatus is calculateStatus (sync.go) over the ReplicaSets.
func DeploymentStatus(d *appsv1.Deployment, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) appsv1.DeploymentStatus {
	st := appsv1.DeploymentStatus{ObservedGeneration: d.Generation, CollisionCount: d.Status.CollisionCount}
	for _, rs := range all {
		st.Replicas += rs.Status.Replicas
		st.ReadyReplicas += rs.Status.ReadyReplicas
		st.AvailableReplicas += rs.Status.AvailableReplicas
	}
	if newRS != nil {
		st.UpdatedReplicas = newRS.Status.Replicas
	}
	st.UnavailableReplicas = max(specReplicas(all)-st.AvailableReplicas, 0)
	st.TerminatingReplicas = terminatingReplicas(all)
	return st
}

// syncStatus writes the status with the Available and Progressing
// conditions (syncRolloutStatus).
func (s *deploymentState) syncStatus(reason, msg string) error {
	d := s.d
	st := DeploymentStatus(d, s.all(), s.newRS)
	now := metav1.NewTime(s.c.Now.Truncate(time.Second))
	st.Conditions = append([]appsv1.DeploymentCondition(nil), d.Status.Conditions...)
	if st.AvailableReplicas >= replicas(d.Spec.Replicas)-MaxUnavailable(d) {
		setCondition(&st, appsv1.DeploymentAvailable, corev1.ConditionTrue, ReasonMinimumAvailable, "Deployment has minimum availability.", now)
	} else {
		setCondition(&st, appsv1.DeploymentAvailable, corev1.ConditionFalse, ReasonMinimumNotAvailable, "Deployment does not have minimum availability.", now)
	}
	rsName := ""
	if s.newRS != nil {
		rsName = s.newRS.Name
	}
	hasDeadline := d.Spec.ProgressDeadlineSeconds != nil && *d.Spec.ProgressDeadlineSeconds != math.MaxInt32
	if hasDeadline {
		// checkPausedConditions (sync.go): Unknown with DeploymentPaused
		// while paused, DeploymentResumed once resumed; a timed-out
		// rollout keeps its condition.
		cur := getCondition(st, appsv1.DeploymentProgressing)
		pausedCond := cur != nil && cur.Reason == ReasonPaused
		switch {
		case cur != nil && cur.Reason == ReasonTimedOut:
		case d.Spec.Paused && !pausedCond:
			setCondition(&st, appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonPaused, "Deployment is paused", now)
		case !d.Spec.Paused && pausedCond:
			setCondition(&st, appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonResumed, "Deployment is resumed", now)
		}
	}
	if hasDeadline && !d.Spec.Paused {
		cur := getCondition(st, appsv1.DeploymentProgressing)
		switch {
		case complete(d, st):
			setCondition(&st, appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewRSAvailable, fmt.Sprintf("ReplicaSet %q has successfully progressed.", rsName), now)
		case reason != "":
			setCondition(&st, appsv1.DeploymentProgressing, corev1.ConditionTrue, reason, msg, now)
		case cur == nil && s.newRS != nil:
			setCondition(&st, appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonFoundNewRS, fmt.Sprintf("Found new replica set %q", rsName), now)
		case progressing(d, st) || (cur != nil && cur.Reason == ReasonNewRSAvailable):
			setCondition(&st, appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonRSUpdated, fmt.Sprintf("ReplicaSet %q is progressing.", rsName), now)
		case cur != nil && cur.Reason != ReasonTimedOut && cur.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds)*time.Second).Before(s.c.Now):
			setCondition(&st, appsv1.DeploymentProgressing, corev1.ConditionFalse, ReasonTimedOut, fmt.Sprintf("ReplicaSet %q has timed out progressing.", rsName), now)
		}
		if cur := getCondition(st, appsv1.DeploymentProgressing); cur != nil && cur.Status == corev1.ConditionTrue && cur.Reason != ReasonNewRSAvailable {
			s.c.RequeueAfter(time.Until(cur.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds)*time.Second + time.Second)))
		}
	}
	return s.c.SetStatus(store.DeploymentKind, d, st)
}

func getCondition(st appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

// setCondition is deploymentutil.SetDeploymentCondition: the transition time
// stays while the status does; the update time moves when anything changes.
func setCondition(st *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType, status corev1.ConditionStatus, reason, msg string, now metav1.Time) {
	cond := appsv1.DeploymentCondition{Type: t, Status: status, Reason: reason, Message: msg, LastUpdateTime: now, LastTransitionTime: now}
	if cur := getCondition(*st, t); cur != nil {
		if cur.Status == status && cur.Reason == reason && cur.Message == msg {
			return
		}
		if cur.Status == status {
			cond.LastTransitionTime = cur.LastTransitionTime
		}
		*cur = cond
		return
	}
	st.Conditions = append(st.Conditions, cond)
}

// claimReplicaSets is ControllerRefManager.ClaimReplicaSets: a ReplicaSet of
// the namespace with no controller whose labels match the Deployment's
// selector is adopted (its controller ownerReference added); one the
// Deployment controls whose labels no longer match is released. objs are
// updated in place.
func claimReplicaSets(c *Context, d *appsv1.Deployment, objs []store.Object) error {
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || d.Spec.Selector == nil || sel.Empty() {
		return err
	}
	for _, o := range objs {
		rs := o.(*appsv1.ReplicaSet)
		if rs.DeletionTimestamp != nil {
			continue
		}
		ref := metav1.GetControllerOf(rs)
		matches := sel.Matches(labels.Set(rs.Labels))
		var change func(refs []metav1.OwnerReference) []metav1.OwnerReference
		switch {
		case ref == nil && matches:
			change = func(refs []metav1.OwnerReference) []metav1.OwnerReference {
				return append(refs, ControllerRef(store.DeploymentKind, d))
			}
		case ref != nil && ref.UID == d.UID && !matches:
			change = func(refs []metav1.OwnerReference) []metav1.OwnerReference {
				var out []metav1.OwnerReference
				for _, r := range refs {
					if r.UID != d.UID {
						out = append(out, r)
					}
				}
				return out
			}
		default:
			continue
		}
		err := c.L.Update(store.ReplicaSetKind, rs.Namespace, rs.Name, func(cur store.Object) error {
			if cur.GetUID() != rs.UID {
				return errUnchanged
			}
			if r := metav1.GetControllerOf(cur); ref == nil && r != nil {
				return errUnchanged // claimed meanwhile
			}
			cur.SetOwnerReferences(change(cur.GetOwnerReferences()))
			return nil
		})
		if err == errUnchanged {
			continue
		}
		if err != nil {
			return err
		}
		rs.OwnerReferences = change(rs.OwnerReferences)
		c.Log.Info("claimed replica set", "replicaset", rs.Namespace+"/"+rs.Name, "deployment", d.Name, "adopted", ref == nil)
	}
	return nil
}

// terminatingReplicas is GetTerminatingReplicaCountForReplicaSets: the sum
// of the ReplicaSets' terminatingReplicas, nil when one the controller has
// synced does not report it.
func terminatingReplicas(all []*appsv1.ReplicaSet) *int32 {
	n := int32(0)
	for _, rs := range all {
		switch {
		case rs == nil, rs.Status.ObservedGeneration == 0 && rs.Status.TerminatingReplicas == nil:
		case rs.Status.TerminatingReplicas == nil:
			return nil
		default:
			n += *rs.Status.TerminatingReplicas
		}
	}
	return &n
}

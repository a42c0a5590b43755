package kubesetup

import (
	"context"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// KubeSecrets are the Secrets of one namespace through the Kubernetes API. The ones
// it makes carry Labels (the release's: `kubectl delete secret -l ...` finds them
// after `helm uninstall`, which does not remove what hooks made).
type KubeSecrets struct {
	Client    kubernetes.Interface
	Namespace string
	Labels    map[string]string
}

// Get implements Secrets.
func (k KubeSecrets) Get(ctx context.Context, name string) (map[string][]byte, bool, error) {
	s, err := k.Client.CoreV1().Secrets(k.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return s.Data, true, nil
}

// Create implements Secrets.
func (k KubeSecrets) Create(ctx context.Context, name, typ string, data map[string][]byte) error {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: k.Namespace, Labels: maps.Clone(k.Labels)},
		Type:       corev1.SecretType(typ),
		Data:       data,
	}
	_, err := k.Client.CoreV1().Secrets(k.Namespace).Create(ctx, s, metav1.CreateOptions{})
	return err
}

// Update implements Secrets: the data replaced, the labels merged, the rest kept (a
// Secret's type cannot change: one of another type is an error to resolve by hand).
func (k KubeSecrets) Update(ctx context.Context, name, typ string, data map[string][]byte) error {
	c := k.Client.CoreV1().Secrets(k.Namespace)
	s, err := c.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if s.Labels == nil {
		s.Labels = map[string]string{}
	}
	maps.Copy(s.Labels, k.Labels)
	s.Type, s.Data, s.StringData = corev1.SecretType(typ), data, nil
	_, err = c.Update(ctx, s, metav1.UpdateOptions{})
	return err
}

// informer is a client-go shared informer on the pods of one node, the way controllers watch
// them: agentprof's tests run it against their loopback API server, to check that server
// speaks the protocol client-go expects (list, watch, bookmarks, 410 Gone and relist). It
// prints one JSON line per event, and "synced" once its cache is.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

func emit(kind string, p *corev1.Pod) {
	b, _ := json.Marshal(map[string]string{"event": kind, "pod": p.Namespace + "/" + p.Name, "rv": p.ResourceVersion})
	fmt.Println(string(b))
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig")
	node := flag.String("node", "", "the node whose pods to watch")
	duration := flag.Duration("duration", 30*time.Second, "how long to run")
	flag.Parse()
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = "spec.nodeName=" + *node
		}))
	inf := f.Core().V1().Pods().Informer()
	_ = inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
		b, _ := json.Marshal(map[string]string{"event": "watch_error", "error": err.Error()})
		fmt.Println(string(b))
	})
	inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { emit("add", o.(*corev1.Pod)) },
		UpdateFunc: func(_, o any) { emit("update", o.(*corev1.Pod)) },
		DeleteFunc: func(o any) {
			if p, ok := o.(*corev1.Pod); ok {
				emit("delete", p)
			} else if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
				emit("delete", t.Obj.(*corev1.Pod))
			}
		},
	})
	stop := make(chan struct{})
	f.Start(stop)
	if !cache.WaitForCacheSync(stop, inf.HasSynced) {
		os.Exit(1)
	}
	fmt.Println(`{"event":"synced"}`)
	time.Sleep(*duration)
	close(stop)
}

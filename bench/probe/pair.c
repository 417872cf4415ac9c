// A minimal N-flow TCP source and sink, one process (one loop) each, used to
// find why four bbr flows on one wirespeed thread trailed iperf3
// (docs/benchmarks.md, "Fifth follow-up"), and bench/compare's floor for the
// s4 rows (src epr into sink ep1, a sink started per run). Not part of the
// product.
// Build: gcc -O2 -pthread -o pair pair.c
//   pair sink PORT N MODE [BLOCK]     MODE sel: select, one read of up to
//                                     128 KiB per ready socket (iperf3's);
//                                     po: the same with poll; ep1: the same
//                                     with epoll; ep: epoll, up to BUD
//                                     reads in a row; thr: a thread per
//                                     flow, blocking reads until EOF
//   pair src IP PORT N SECS MODE [BLOCK]
//                                     MODE sel: select, BUD rounds of one
//                                     write per socket (iperf3's multisend);
//                                     sels: select, BUD writes in a row;
//                                     epr: epoll, BUD passes of one send per
//                                     ready socket; ep: epoll, BUD in a row;
//                                     thr: a thread per flow, blocking
//                                     sends (iperf3 3.21's model)
// BLOCK 1 makes the data sockets blocking. Environment: BUD (default 16),
// CC (default bbr), V6 (sink listens dual-stack), ZERO (send zeroes),
// LOWAT=K (SO_RCVLOWAT on the sink's sockets), CALLOC=K (buffer from
// calloc, K-1 bytes past its start), THR (run the loop in a second
// thread), PRE=K (K bytes before the stream), WSTOK=hex and WAIT (used by
// drive.py: a wirespeed data preamble per flow, then wait for one byte on
// stdin).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>
#include <fcntl.h>
#include <time.h>
#include <sys/select.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#define MSG (128*1024)
static char sbuf[MSG]; static char*buf=sbuf;
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec/1e9;}
static void nb(int fd,int on){int f=fcntl(fd,F_GETFL);fcntl(fd,F_SETFL,on?f|O_NONBLOCK:f&~O_NONBLOCK);}
static int realmain(int c,char**v);
#include <pthread.h>
static int gc;static char**gv;static volatile int done;static int rc;
static void*thr(void*x){rc=realmain(gc,gv);done=1;return 0;}
int main(int c,char**v){ if(!getenv("THR")) return realmain(c,v); gc=c;gv=v;pthread_t t;pthread_create(&t,0,thr,0);while(!done){struct timespec ts={0,25000000};nanosleep(&ts,0);} pthread_join(t,0); return rc;}
// thr: a thread per flow with blocking calls (iperf3 3.21's model), each
// with its own buffer: a sender sends until the end, a receiver until EOF.
struct th{int fd;int snd;double end;long long tot;};
static void*flow_thr(void*x){struct th*t=x;char*b=malloc(MSG);if(!b)return 0;memset(b,'x',MSG);
  if(t->snd){while(now()<t->end){ssize_t k=send(t->fd,b,MSG,0);if(k>0)t->tot+=k;else if(k<0&&errno!=EINTR)break;}}
  else{ssize_t r;while((r=recv(t->fd,b,MSG,0))>0)t->tot+=r;close(t->fd);}
  free(b);return 0;}
static long long run_thr(int*fds,int n,int snd,double end){pthread_t p[64];struct th t[64];long long tot=0;
  for(int i=0;i<n;i++){nb(fds[i],0);t[i]=(struct th){fds[i],snd,end,0};pthread_create(&p[i],0,flow_thr,&t[i]);}
  for(int i=0;i<n;i++){pthread_join(p[i],0);tot+=t[i].tot;}return tot;}
static int realmain(int c,char**v){
  int sink=!strcmp(v[1],"sink"); int fds[64]; int n; const char*mode; int block;
  char *cc=getenv("CC")?getenv("CC"):"bbr"; int budget=getenv("BUD")?atoi(getenv("BUD")):16;
  if(getenv("CALLOC")){buf=calloc(1,MSG+atoi(getenv("CALLOC")))+atoi(getenv("CALLOC"))-1;}
  if(!getenv("CALLOC"))memset(buf,getenv("ZERO")?0:(int)'x',MSG);
  if(sink){int port=atoi(v[2]);n=atoi(v[3]);mode=v[4];block=c>5?atoi(v[5]):0;
    int v6=getenv("V6")!=0; int l=socket(v6?AF_INET6:AF_INET,SOCK_STREAM,0);int one=1,zero=0;setsockopt(l,SOL_SOCKET,SO_REUSEADDR,&one,4);
    if(v6){setsockopt(l,IPPROTO_IPV6,IPV6_V6ONLY,&zero,4);struct sockaddr_in6 a6={.sin6_family=AF_INET6,.sin6_port=htons(port)};bind(l,(void*)&a6,sizeof a6);}
    else{struct sockaddr_in a={.sin_family=AF_INET,.sin_port=htons(port)};bind(l,(void*)&a,sizeof a);} listen(l,64);
    for(int i=0;i<n;i++){fds[i]=accept(l,0,0);if(getenv("PRE")){int p=atoi(getenv("PRE"));if(read(fds[i],buf,p)!=p)return 2;}nb(fds[i],!block);if(getenv("LOWAT")){int lw=atoi(getenv("LOWAT"));setsockopt(fds[i],SOL_SOCKET,SO_RCVLOWAT,&lw,4);}}
    long long tot=0;int open=n;double t0=now();
    if(!strcmp(mode,"thr")) tot=run_thr(fds,n,0,0);
    else if(!strcmp(mode,"sel")){
      while(open){fd_set r;FD_ZERO(&r);int mx=0;for(int i=0;i<n;i++)if(fds[i]>=0){FD_SET(fds[i],&r);if(fds[i]>mx)mx=fds[i];}
        select(mx+1,&r,0,0,0);
        for(int i=0;i<n;i++)if(fds[i]>=0&&FD_ISSET(fds[i],&r)){
          // iperf3 Nread: loop until MSG read, EAGAIN or EOF
          int left=MSG;while(left>0){ssize_t k=read(fds[i],buf,left);if(k<0){break;}if(k==0){close(fds[i]);fds[i]=-1;open--;break;}tot+=k;left-=k;}
        }}
    } else if(!strcmp(mode,"po")){
      // poll, iperf3's reads: like sel, the wait entries exist only in poll
      while(open){struct pollfd p[64];for(int i=0;i<n;i++){p[i].fd=fds[i];p[i].events=POLLIN;}
        nfds_t np=(unsigned)n>64u?64u:(unsigned)n;poll(p,np,-1);
        for(int i=0;i<n;i++)if(fds[i]>=0&&(p[i].revents&(POLLIN|POLLHUP|POLLERR))){
          int left=MSG;while(left>0){ssize_t k=read(fds[i],buf,left);if(k<0){break;}if(k==0){close(fds[i]);fds[i]=-1;open--;break;}tot+=k;left-=k;}
        }}
    } else {
      // ep: up to BUD reads in a row per ready socket; ep1: iperf3's reads
      // (until MSG bytes, EAGAIN or EOF), the wait entries kept by epoll
      int one_msg=!strcmp(mode,"ep1");
      int ep=epoll_create1(0);for(int i=0;i<n;i++){struct epoll_event e={.events=EPOLLIN,.data.u32=i};epoll_ctl(ep,EPOLL_CTL_ADD,fds[i],&e);}
      struct epoll_event ev[64];
      while(open){int k=epoll_wait(ep,ev,64,-1);for(int j=0;j<k;j++){int i=ev[j].data.u32;if(fds[i]<0)continue;
        if(one_msg){int left=MSG;while(left>0){ssize_t r=read(fds[i],buf,left);if(r<0)break;if(r==0){close(fds[i]);fds[i]=-1;open--;break;}tot+=r;left-=r;}continue;}
        for(int b=0;b<budget;b++){ssize_t r=recv(fds[i],buf,MSG,0);if(r<0)break;if(r==0){close(fds[i]);fds[i]=-1;open--;break;}tot+=r;}}}
    }
    double dt=now()-t0;printf("sink %.2f Gbit/s\n",tot*8/dt/1e9);return 0;
  } else {
    const char*ip=v[2];int port=atoi(v[3]);n=atoi(v[4]);double secs=atof(v[5]);mode=v[6];block=c>7?atoi(v[7]):0;double end;
    for(int i=0;i<n;i++){fds[i]=socket(AF_INET,SOCK_STREAM,0);setsockopt(fds[i],IPPROTO_TCP,TCP_CONGESTION,cc,strlen(cc));
      struct sockaddr_in a={.sin_family=AF_INET,.sin_port=htons(port)};inet_pton(AF_INET,ip,&a.sin_addr);
      if(connect(fds[i],(void*)&a,sizeof a)){perror("connect");return 1;}
      if(getenv("PRE")){int p=atoi(getenv("PRE"));if(write(fds[i],buf,p)!=p)return 2;}
      if(getenv("WSTOK")){unsigned char pre[24];memcpy(pre,"WSPD",4);const char*h=getenv("WSTOK");for(int k=0;k<16;k++){unsigned x;sscanf(h+2*k,"%2x",&x);pre[4+k]=x;}
        pre[20]=0;pre[21]=0;pre[22]=0;pre[23]=i;if(write(fds[i],pre,24)!=24)return 2;}
      nb(fds[i],!block);}
    if(getenv("WAIT")){char ch;if(read(0,&ch,1)!=1)return 3;} end=now()+secs;
    long long tot=0;
    if(!strcmp(mode,"thr")) tot=run_thr(fds,n,1,end);
    else if(!strcmp(mode,"sel")){
      while(now()<end){fd_set w;FD_ZERO(&w);int mx=0;for(int i=0;i<n;i++){FD_SET(fds[i],&w);if(fds[i]>mx)mx=fds[i];}
        struct timeval tv={0,100000};select(mx+1,0,&w,0,&tv);
        for(int m=0;m<budget;m++)for(int i=0;i<n;i++)if(FD_ISSET(fds[i],&w)){ssize_t k=write(fds[i],buf,MSG);if(k>0)tot+=k;}
      }
    } else if(!strcmp(mode,"sels")){
      while(now()<end){fd_set w;FD_ZERO(&w);int mx=0;for(int i=0;i<n;i++){FD_SET(fds[i],&w);if(fds[i]>mx)mx=fds[i];}
        struct timeval tv={0,100000};select(mx+1,0,&w,0,&tv);
        for(int i=0;i<n;i++)if(FD_ISSET(fds[i],&w))for(int m=0;m<budget;m++){ssize_t k=write(fds[i],buf,MSG);if(k>0)tot+=k;else break;}
      }
    } else if(!strcmp(mode,"epr")){
      int ep=epoll_create1(0);for(int i=0;i<n;i++){struct epoll_event e={.events=EPOLLOUT,.data.u32=i};epoll_ctl(ep,EPOLL_CTL_ADD,fds[i],&e);}
      struct epoll_event ev[64];
      while(now()<end){int k=epoll_wait(ep,ev,64,100);int live[64];for(int j=0;j<k;j++)live[j]=1;
        for(int b=0;b<budget;b++){int any=0;for(int j=0;j<k;j++)if(live[j]){int i=ev[j].data.u32;ssize_t r=send(fds[i],buf,MSG,0);if(r<0)live[j]=0;else{tot+=r;any=1;}}if(!any)break;}}
    } else {
      int ep=epoll_create1(0);for(int i=0;i<n;i++){struct epoll_event e={.events=EPOLLOUT,.data.u32=i};epoll_ctl(ep,EPOLL_CTL_ADD,fds[i],&e);}
      struct epoll_event ev[64];
      while(now()<end){int k=epoll_wait(ep,ev,64,100);for(int j=0;j<k;j++){int i=ev[j].data.u32;
        for(int b=0;b<budget;b++){ssize_t r=send(fds[i],buf,MSG,0);if(r<0)break;tot+=r;}}}
    }
    for(int i=0;i<n;i++)shutdown(fds[i],SHUT_WR);
    for(int i=0;i<n;i++){nb(fds[i],0);while(read(fds[i],buf,MSG)>0);close(fds[i]);}
    printf("src %.2f Gbit/s\n",tot*8/secs/1e9);return 0;
  }
}

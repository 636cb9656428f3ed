/**
 * The checkout page's own script (inline, under the page's CSP nonce). It reads everything
 * from data attributes of #checkout: pays through /v1/client/pay with the channel of the
 * button clicked, shows WeChat Pay's QR code (an SVG the service draws,
 * /checkout/<token>/wechat-qr.svg, placed inline: the page's CSP allows no image loads), follows a redirect (Alipay: page pay, WAP pay on a small
 * screen), and polls /v1/client/order while a payment is open until the order is settled.
 */
export const CHECKOUT_SCRIPT = `
(function(){
  var root=document.getElementById('checkout'); if(!root) return;
  var token=root.getAttribute('data-token'), out=document.getElementById('status');
  var pollMs=2000, polling=false;
  var labels={paid:'Paid',delivered:'Paid',refund_pending:'Refund pending',refund_failed:'Paid',refunded:'Refunded',expired:'Expired',canceled:'Canceled',created:'Awaiting payment'};
  function buttons(){ return Array.prototype.slice.call(document.querySelectorAll('button.pay')); }
  function drop(id){ var n=document.getElementById(id); if(n) n.remove(); }
  function settle(){ buttons().forEach(function(b){ b.remove(); }); drop('note'); drop('qr-box'); }
  function show(st){
    out.setAttribute('data-status',st); out.textContent=labels[st]||st;
    out.className='status'+(st==='paid'||st==='delivered'?' paid':'');
    if(st!=='created') settle();
  }
  function fail(msg){ out.className='status error'; out.textContent=msg; }
  function post(url,body){
    return fetch(url,{method:'POST',headers:{'content-type':'application/json'},body:JSON.stringify(body)})
      .then(function(r){ return r.json().then(function(b){ return {ok:r.ok,status:r.status,body:b}; }); });
  }
  // Follows the order while a payment is open: WeChat Pay's callback settles it elsewhere.
  function poll(){
    if(polling) return; polling=true;
    (function tick(){
      post(root.getAttribute('data-order-url'),{order_token:token}).then(function(res){
        if(res.ok && res.body.status!=='created'){ polling=false; show(res.body.status); return; }
        if(!res.ok && res.status===401){ polling=false; fail(res.body.message); settle(); return; }
        setTimeout(tick,pollMs);
      },function(){ setTimeout(tick,pollMs); });
    })();
  }
  function act(action){
    if(action && action.type==='qr'){
      fetch(root.getAttribute('data-qr-url')).then(function(r){ if(!r.ok) throw new Error(); return r.text(); }).then(function(text){
        var svg=document.importNode(new DOMParser().parseFromString(text,'image/svg+xml').documentElement,true);
        svg.setAttribute('id','qr'); svg.setAttribute('role','img'); svg.setAttribute('aria-label','WeChat Pay QR code');
        var box=document.getElementById('qr-box'); box.replaceChildren(svg); box.hidden=false;
        out.className='status'; out.textContent='Scan the code with WeChat to pay'; poll();
      }).catch(function(){ fail('The QR code could not be loaded, try again'); });
    } else if(action && action.type==='redirect'){ out.textContent='Opening the payment page…'; window.location.assign(action.url); }
  }
  function modeOf(channel){
    if(channel==='wechat') return 'native';
    if(channel==='alipay') return window.matchMedia('(max-width: 600px)').matches?'wap':'page';
    return undefined;
  }
  buttons().forEach(function(btn){
    btn.addEventListener('click',function(){
      var channel=btn.getAttribute('data-channel'), body={order_token:token,channel:channel}, mode=modeOf(channel);
      if(mode) body.mode=mode;
      buttons().forEach(function(b){ b.disabled=true; }); out.className='status'; out.textContent='Paying…';
      post(root.getAttribute('data-pay-url'),body).then(function(res){
        buttons().forEach(function(b){ b.disabled=false; });
        if(res.ok){ if(res.body.status!=='created') show(res.body.status); else act(res.body.action); return; }
        fail(res.body.message||'Payment failed');
        // Expired or canceled meanwhile (409), token refused (401): no channel can help; a
        // channel turned off meanwhile (403): that one cannot.
        if(res.status===409||res.status===401) settle(); else if(res.status===403) btn.remove();
      }).catch(function(){ fail('Network error, try again'); buttons().forEach(function(b){ b.disabled=false; }); });
    });
  });
})();`;

-- POST /tx/createTransferRequest in test mode, every request with a reference never used before:
-- "bcr" .. <run nonce> .. <2-digit thread> .. <10-digit counter>. Test mode opens the order
-- through the issuer's in-process simulator, then commits the transfer.
--
--   wrk -t1 -c16 -d10s -s bench/create.lua http://127.0.0.1:8000 -- pr_test_... a1b2c3 Bybit ZAR
local here = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or ""
dofile(here .. "report.lua")

local headers, nonce, issuer, currency
local counter = 0

local template = '{"recipient":"0x9f3c1a2b4d5e6f708192a3b4c5d6e7f8091a2b3c",'
  .. '"amount":%d.%02d,"issuer":"%s","acquirerMerchantName":"Paystack","reference":"%s",'
  .. '"merchantID":"bench-issuer-merchant","description":"2 x Coffee beans 500 g",'
  .. '"terminalType":"WEB","successUrl":"https://example.com/paid",'
  .. '"failedUrl":"https://example.com/failed",'
  .. '"webhookUrl":"http://127.0.0.1:9/hooks/payrelay","currency":"%s"}'

function init(args)
  headers = {
    ["Authorization"] = "Bearer " .. args[1],
    ["Content-Type"] = "application/json",
  }
  nonce = args[2]
  issuer = args[3] or "Bybit"
  currency = args[4] or "ZAR"
end

function request()
  counter = counter + 1
  local reference = string.format("bcr%s%02d%010d", nonce, thread_number or 1, counter)
  local body = string.format(template, 100 + counter % 900, counter % 100, issuer, reference,
    currency)
  return wrk.format("POST", "/tx/createTransferRequest", headers, body)
end
